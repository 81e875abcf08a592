"""Relative times in German, French, Spanish, Italian and Portuguese are grounded like
English ones (`rmm_core.language.timeref`): "gestern" said on 8 May 2024 reads
"gestern (7 May 2024)", written the way people chat."""

from __future__ import annotations

import sys
from datetime import datetime

import pytest

from rmm_core import ReflectiveMemory
from rmm_core.language.timeref import find_relative, ground, resolve
from rmm_core.read.when import Period, named_period

SAID = datetime(2024, 5, 8, 19, 30)  # a Wednesday


@pytest.mark.parametrize(("text", "grounded"), [
    ("gestern war ich mit lena im kino 🍿", "gestern (7 May 2024) war ich mit lena im kino 🍿"),
    ("Vorgestern hat mein Chef gekündigt!!", "Vorgestern (6 May 2024) hat mein Chef gekündigt!!"),
    ("morgen früh flieg ich nach wien", "morgen (9 May 2024) früh flieg ich nach wien"),
    ("hab letzte woche endlich den umzug geschafft",
     "hab letzte woche (the week of 29 April 2024) endlich den umzug geschafft"),
    ("letzten Monat 3 kilo abgenommen 💪", "letzten Monat (April 2024) 3 kilo abgenommen 💪"),
    ("vor drei tagen hat die kita angerufen",
     "vor drei tagen (5 May 2024) hat die kita angerufen"),
    ("in zwei Wochen ist die Hochzeit von Tim",
     "in zwei Wochen (22 May 2024) ist die Hochzeit von Tim"),
    ("war letzten Freitag beim Arzt", "war letzten Freitag (3 May 2024) beim Arzt"),
    ("naechste woche hab ich urlaub", "naechste woche (the week of 13 May 2024) hab ich urlaub"),
    ("vor einem Jahr bin ich nach Köln gezogen", "vor einem Jahr (2023) bin ich nach Köln gezogen"),
])
def test_german(text, grounded):
    assert ground(text, SAID) == grounded


@pytest.mark.parametrize(("text", "grounded"), [
    ("hier soir on a mangé chez Paul", "hier (7 May 2024) soir on a mangé chez Paul"),
    ("avant-hier j'ai eu mon permis 🎉", "avant-hier (6 May 2024) j'ai eu mon permis 🎉"),
    ("demain je commence à 8h", "demain (9 May 2024) je commence à 8h"),
    ("la semaine dernière j'étais malade",
     "la semaine dernière (the week of 29 April 2024) j'étais malade"),
    ("semaine derniere jetais creve", "semaine derniere (the week of 29 April 2024) jetais creve"),
    ("le mois dernier on a déménagé à Lyon", "le mois dernier (April 2024) on a déménagé à Lyon"),
    ("il y a deux jours ma sœur a accouché", "il y a deux jours (6 May 2024) ma sœur a accouché"),
    ("dans trois semaines c'est les vacances",
     "dans trois semaines (29 May 2024) c'est les vacances"),
    ("vendredi dernier j'ai vu le médecin", "vendredi dernier (3 May 2024) j'ai vu le médecin"),
    ("l'an dernier on était à Rome", "l'an dernier (2023) on était à Rome"),
])
def test_french(text, grounded):
    assert ground(text, SAID) == grounded


@pytest.mark.parametrize(("text", "grounded"), [
    ("ayer fui al dentista 😬", "ayer (7 May 2024) fui al dentista 😬"),
    ("anteayer me llamó mi madre", "anteayer (6 May 2024) me llamó mi madre"),
    ("mañana tengo examen de conducir", "mañana (9 May 2024) tengo examen de conducir"),
    ("manana tengo examen", "manana (9 May 2024) tengo examen"),
    ("la semana pasada empecé en el gym",
     "la semana pasada (the week of 29 April 2024) empecé en el gym"),
    ("el mes pasado me mudé a Sevilla", "el mes pasado (April 2024) me mudé a Sevilla"),
    ("hace tres dias me robaron la bici", "hace tres dias (5 May 2024) me robaron la bici"),
    ("el viernes pasado cenamos con Ana", "el viernes pasado (3 May 2024) cenamos con Ana"),
    ("pasado mañana vuelve Lucía", "pasado mañana (10 May 2024) vuelve Lucía"),
])
def test_spanish(text, grounded):
    assert ground(text, SAID) == grounded


@pytest.mark.parametrize(("text", "grounded"), [
    ("esta mañana llovió muchísimo", "esta mañana llovió muchísimo"),
    ("me levanto temprano por la mañana", "me levanto temprano por la mañana"),
    ("mañana por la mañana voy al médico", "mañana (9 May 2024) por la mañana voy al médico"),
    ("heute Morgen war der Zug wieder zu spät", "heute Morgen war der Zug wieder zu spät"),
    ("Guten Morgen! ich bin hier im Büro", "Guten Morgen! ich bin hier im Büro"),
    ("cette semaine-là j'étais à Nantes", "cette semaine-là j'étais à Nantes"),
])
def test_mornings_and_look_alikes_stay_as_said(text, grounded):
    assert ground(text, SAID) == grounded


@pytest.mark.parametrize(("text", "grounded"), [
    ("ieri sono andata a Milano", "ieri (7 May 2024) sono andata a Milano"),
    ("l'altro ieri ho perso le chiavi 🙄", "l'altro ieri (6 May 2024) ho perso le chiavi 🙄"),
    ("domani ho il colloquio!!", "domani (9 May 2024) ho il colloquio!!"),
    ("la settimana scorsa ho iniziato yoga",
     "la settimana scorsa (the week of 29 April 2024) ho iniziato yoga"),
    ("il mese scorso ho cambiato lavoro", "il mese scorso (April 2024) ho cambiato lavoro"),
    ("tre giorni fa è nato mio nipote", "tre giorni fa (5 May 2024) è nato mio nipote"),
    ("venerdi scorso siamo stati al mare", "venerdi scorso (3 May 2024) siamo stati al mare"),
    ("un mese fa ho comprato la moto", "un mese fa (April 2024) ho comprato la moto"),
])
def test_italian(text, grounded):
    assert ground(text, SAID) == grounded


@pytest.mark.parametrize(("text", "grounded"), [
    ("ontem fui ao médico", "ontem (7 May 2024) fui ao médico"),
    ("anteontem choveu demais", "anteontem (6 May 2024) choveu demais"),
    ("amanha tenho prova 😩", "amanha (9 May 2024) tenho prova 😩"),
    ("a semana passada foi puxada", "a semana passada (the week of 29 April 2024) foi puxada"),
    ("o mês passado comecei na Natura", "o mês passado (April 2024) comecei na Natura"),
    ("há três dias adotei um gato", "há três dias (5 May 2024) adotei um gato"),
    ("na sexta-feira passada fomos ao cinema",
     "na sexta-feira passada (3 May 2024) fomos ao cinema"),
    ("faz 2 semanas que parei de fumar", "faz 2 semanas (24 April 2024) que parei de fumar"),
])
def test_portuguese(text, grounded):
    assert ground(text, SAID) == grounded


def test_grounding_twice_changes_nothing():
    for text in ("gestern und letzte Woche und vor drei Tagen",
                 "hier, puis la semaine dernière et il y a deux jours",
                 "ayer, la semana pasada y hace tres días",
                 "ieri, la settimana scorsa e tre giorni fa",
                 "ontem, a semana passada e há três dias"):
        once = ground(text, SAID)
        assert once != text
        assert ground(once, SAID) == once


def test_a_text_without_a_relative_time_never_reaches_dateparser(monkeypatch):
    monkeypatch.setitem(sys.modules, "dateparser", None)  # importing it now fails
    monkeypatch.setitem(sys.modules, "dateparser.date", None)
    for text in ("hab heute nix gemacht, nur gelesen 📚", "on se voit au resto ce soir ?",
                 "I finally sent the quarterly report to my manager"):
        assert ground(text, SAID) == text
    with pytest.raises(ImportError):  # a count is what dateparser reads
        ground("vor drei Tagen", SAID)


def test_a_question_in_german_names_its_period():
    assert resolve(find_relative("was hab ich letzte Woche gemacht?"), SAID.date()) == \
        "the week of 29 April 2024"
    period = named_period("was hab ich letzte Woche gemacht?", SAID)
    assert period == Period(datetime(2024, 4, 29).date(), datetime(2024, 5, 5).date())


def test_a_fact_added_in_german_is_dated(tmp_path):
    with ReflectiveMemory.open(str(tmp_path / "m.sqlite")) as mem:
        mem.add("gestern habe ich meinen neuen Job bei Siemens angefangen", user_id="u",
                occurred_at="2024-05-08")
        assert "gestern (7 May 2024)" in mem.memories(user_id="u")[0].text
