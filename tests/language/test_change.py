"""How sure a later statement changed an earlier fact (`rmm_core.language.change`): text
only, no store. A mention of the fact's value is no change; a change is asserted only when
something says it."""

from __future__ import annotations

import pytest

from rmm_core.language.change import SURE, evidence
from rmm_core.language.languages import language, reads
from rmm_core.language.values import values

EN = {"en"}  # the packaged MiniLM reads English meaning


@pytest.mark.parametrize("old, new, question", [
    ("I drive a blue Golf.", "The Golf made that grinding noise again, garage on Monday.",
     "What car do I drive?"),
    ("my husky juno is shedding so much", "everyone keeps sending me that tiktok of the husky "
     "that screams, that's NOT juno lol", "what dog do i have"),
    ("one year in lisbon today!", "back in london at my parents for xmas, counting days till "
     "i fly home to lisbon", "what city do I live in"),
    ("Ich fahre einen alten VW Golf IV.", "Der Golf ist heute schon wieder nicht "
     "angesprungen, Batterie leer.", "Welches Auto fahre ich?"),
    ("ma clio de 2011 a passé le contrôle technique", "la clio fait un bruit bizarre en 2e, "
     "genre un sifflement", "quelle voiture j'ai ?"),
    ("me apunté al box de crossfit del barrio, lunes y viernes", "el box de crossfit ha subido "
     "la cuota a 85 al mes!!", "qué deporte hago"),
])
def test_a_later_mention_of_the_value_is_no_change(old, new, question):
    found = evidence(old, new, question=question, meaning=EN)
    assert found.kind == "mention"
    assert not found.sure


@pytest.mark.parametrize("old, new, question", [
    ("I drive a blue Golf.", "Sold the Golf last week, I'm driving a Model 3 now.",
     "What car do I drive?"),
    ("I work as a nurse on the cardiac ward at St Mary's", "handed in my notice at St Mary's "
     "in July. I'm a school nurse at Ridgeview since September", "Where do I work?"),
    ("Ich arbeite bei Siemens in der Buchhaltung.", "Bei Siemens habe ich gekündigt, seit "
     "März bin ich bei einer kleinen Agentur.", "Wo arbeite ich?"),
])
def test_a_value_said_to_have_ended_is_a_sure_change(old, new, question):
    found = evidence(old, new, question=question, meaning=EN)
    assert found.kind == "ends"
    assert found.sure


def test_a_value_replaced_now_is_a_sure_change():
    found = evidence("I wear a Fitbit Charge 5 every day", "the Fitbit strap snapped so now "
                     "I wear an Apple Watch", question="what fitness tracker do I use",
                     meaning=EN)
    assert found.kind == "replaces"
    assert found.sure


def test_a_change_in_other_words_is_sure_where_the_embedder_reads_the_language():
    old, new = "I'm a barista at Blue Bottle", "Three weeks into the bank job, I don't miss " \
        "the coffee shop rush at all"
    assert evidence(old, new, question="Where do I work?", meaning=EN).sure
    german = evidence("ich bin Kellnerin in einem Café", "Erste Woche bei der Bank rum, "
                      "der Anzug fühlt sich komisch an", question="Wo arbeite ich?",
                      meaning=EN)
    assert german.kind is None  # no shared word, and MiniLM's nearness says little in German
    assert evidence("ich bin Kellnerin in einem Café", "Erste Woche bei der Bank rum, der "
                    "Anzug fühlt sich komisch an", question="Wo arbeite ich?",
                    meaning=None).sure


@pytest.mark.parametrize("new", [
    "I thought about applying for a sales rep job in London, but decided not to bother.",
    "Big news: I got a job offer from a hospital in Berlin. I'm thinking of taking it.",
    "moved piano to thursday just this week bc of parents evening",
    "spending two weeks in Lisbon for work, back on the 20th",
    "my sister moved to Boise, gonna miss her",
    "what's a good commute from Leith to the city centre?",
])
def test_plans_offers_one_offs_stays_others_news_and_questions_state_no_change(new):
    found = evidence("I work as a pharmacist at Boots in Leith, piano on wednesdays", new,
                     question="", meaning=EN)
    assert not found.stated
    assert found.confidence == 0.0


LONG_DAY = ("quick catch-up before I forget everything. the kids both have colds again. "
            "{change} {aside} my brother wants us all in Mallorca next summer, which I doubt "
            "will happen. any idea how to bleed a radiator?")


@pytest.mark.parametrize("old, change, told, aside, question", [
    ("Book club meets on the first Tuesday of the month at Ines's flat.",
     "book club got moved to the second thursday, her shifts changed.",
     "My sister's book club got moved to the second thursday, her shifts changed.",
     "not sure I'll finish this month's book anyway, I might just skip it.",
     "When does my book club meet?"),
    ("I put 150 a month into my pension.", "After the raise I upped my pension from 150 to "
     "220 a month, starting in May.", "My brother upped his pension from 150 to 220 a "
     "month after his raise.", "I might open a second pension someday too.",
     "How much do I put into my pension?"),
])
def test_a_change_inside_a_long_message_is_read_from_its_own_sentence(old, change, told,
                                                                       aside, question):
    long_ = LONG_DAY.format(change=change, aside=aside)
    assert evidence(old, long_, question=question, meaning=EN).sure
    weighed = change.split(".")[0].replace("got moved", "might move") \
        .replace("After the raise I upped", "I might up")
    assert not evidence(old, LONG_DAY.format(change=weighed + ".", aside=aside),
                        question=question, meaning=EN).sure
    others = LONG_DAY.format(change=told, aside=aside)  # someone else's news, not mine
    assert not evidence(old, others, question=question, meaning=EN).sure


def test_a_statement_about_another_attribute_is_no_version_of_the_asked_one():
    found = evidence("I live in Lisbon.", "I work as a nurse at the city hospital.",
                     question="Where do I live?", meaning=EN)
    assert not found.tied
    assert not found.sure


@pytest.mark.parametrize("old, new", [
    ("я живу в Москве, на Арбате", "снова пробки на Арбате, час до работы"),
    ("我住在上海，浦东", "我搬到北京了，住在朝阳区"),
    ("mieszkam w Krakowie na Kazimierzu", "przeprowadziłam się do Gdańska"),
])
def test_in_a_language_the_rules_do_not_read_nothing_is_asserted(old, new):
    found = evidence(old, new, question="", meaning=None)
    assert not found.read
    assert not found.sure


def test_the_confidence_reads_as_a_threshold():
    kinds = {"mention": evidence("I drive a blue Golf.", "washed the golf today",
                                 question="What car do I drive?"),
             "ends": evidence("I drive a blue Golf.", "sold the golf yesterday",
                              question="What car do I drive?")}
    assert kinds["mention"].confidence < SURE <= kinds["ends"].confidence


def test_typed_values_are_compared_by_kind():
    assert ("number inch", "42") in values("our TV is a 42 inch from like 2014")
    assert ("day", "tuesd") in values("the class moved to Tuesdays")
    assert ("contact", "marie.dupont@gmail.com") in values("écris-moi sur "
                                                           "marie.dupont@gmail.com")


@pytest.mark.parametrize("text, code", [
    ("I moved to Berlin last week and I love it", "en"),
    ("Ich wohne jetzt in Köln und arbeite bei einer Bank", "de"),
    ("j'habite à Lyon avec ma copine depuis deux ans", "fr"),
    ("vivo en Sevilla con dos compañeros de piso", "es"),
    ("ik woon nu in Utrecht met mijn vriendin", "nl"),
    ("я живу в Москве", "xx"),
    ("mieszkam w Krakowie, pracuję jako pielęgniarka", "xx"),
])
def test_the_language_is_guessed_from_stop_words_and_letters(text, code):
    assert language(text) == code
    assert reads(text) is (code in {"en", "de", "fr", "es", "it", "pt"})


@pytest.mark.parametrize("old, new, ended", [
    ("I'm doing an evening pottery course", "work is mad and I don't want to quit the "
     "pottery course, I just need a break", False),
    ("ich mache abends einen Töpferkurs", "ich will den Töpferkurs nicht aufgeben, ich "
     "brauche nur eine Pause", False),
    ("I'm doing an evening pottery course", "the pottery course has gone really intense "
     "since the exams moved", False),
    ("I'm doing an evening pottery course", "I quit the pottery course in May, too much "
     "with the new job", True),
    ("ich mache abends einen Töpferkurs", "den Töpferkurs habe ich aufgegeben, zu viel mit "
     "dem neuen Job", True),
    ("I'm doing an evening pottery course", "the pottery course studio was without heating "
     "all week", False),
    ("I'm doing an evening pottery course", "the pottery course is where I met Dana, who "
     "says her old flatmate was replaced by a cat", False),
])
def test_an_end_word_after_a_wish_a_denial_or_a_turn_ends_nothing(old, new, ended):
    found = evidence(old, new, question="", meaning=EN)
    assert found.ends is ended
    assert found.sure is ended
