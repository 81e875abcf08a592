"""The words of relative times in German, French, Spanish, Italian and Portuguese, for
`timeref`: by what they mean in English, written with their accents, hyphens and
apostrophes (`timeref` also finds them typed without)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Words:
    """One language's relative times: each table maps a meaning to its words, "|" between."""

    days: dict[int, str]
    """Days by their distance from the day said: {-1: "gestern"}."""
    before: dict[str, str]
    """"last", "next" and "this" said before a period: "letzte Woche"."""
    after: dict[str, str]
    """The same said after it: "la semaine dernière"."""
    periods: dict[str, str]
    """What a step moves: week, weekend, month, year, the weekdays and the seasons."""
    units: dict[str, str]
    """What a count counts: day, week, month, year."""
    numbers: str
    """The counts in words."""
    ago: str
    """Before a count, said of the past ("vor drei Tagen")."""
    ahead: str
    """Before a count, said of the future ("in drei Tagen")."""
    ago_as: str
    """A count in the past as dateparser reads it."""
    ahead_as: str
    """A count in the future as dateparser reads it."""
    ago_after: str = ""
    """After a count, said of the past ("tre giorni fa")."""
    guards: dict[int | str, str] = field(default_factory=dict)
    """A lookbehind before the words of a day, step or period, where they can mean
    something else: "heute Morgen" is this morning."""


LANGUAGES = {
    "de": Words(
        days={-2: "vorgestern", -1: "gestern", 1: "morgen", 2: "übermorgen"},
        before={"last": "letzte|letzten|letzter|letztes|vergangene|vergangenen|vergangenes|"
                        "vorige|vorigen|voriges",
                "next": "nächste|nächsten|nächstes|kommende|kommenden|kommendes",
                "this": "diese|diesen|dieses"},
        after={},
        periods={"week": "woche", "weekend": "wochenende", "month": "monat", "year": "jahr",
                 "monday": "montag", "tuesday": "dienstag", "wednesday": "mittwoch",
                 "thursday": "donnerstag", "friday": "freitag", "saturday": "samstag|sonnabend",
                 "sunday": "sonntag", "spring": "frühling|frühjahr", "summer": "sommer",
                 "autumn": "herbst", "winter": "winter"},
        units={"day": "tag|tage|tagen", "week": "woche|wochen", "month": "monat|monate|monaten",
               "year": "jahr|jahre|jahren"},
        numbers="ein|einem|einer|zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|elf|zwölf",
        ago="vor", ahead="in", ago_as="vor {}", ahead_as="in {}",
        guards={1: r"(?<!\b(?:heute|heut|gestern|vorgestern|morgen|guten|gute|am|jeden|diesen|"
                   r"den|einen|eines|ganzen|schönen|frühen|der|dem|des|montag|dienstag|"
                   r"mittwoch|donnerstag|freitag|samstag|sonntag) )",
                "last": r"(?<!\b(?:die|der|das|den|dem|des) )"}),  # die letzte Woche: 7 days
    "fr": Words(
        days={-2: "avant-hier", -1: "hier", 1: "demain", 2: "après-demain"},
        before={"next": "prochain|prochaine", "this": "ce|cet|cette"},
        after={"last": "dernier|dernière|passé|passée", "next": "prochain|prochaine"},
        periods={"week": "semaine", "weekend": "week-end", "month": "mois|mois-ci",
                 "year": "an|année", "monday": "lundi", "tuesday": "mardi",
                 "wednesday": "mercredi", "thursday": "jeudi", "friday": "vendredi",
                 "saturday": "samedi", "sunday": "dimanche", "spring": "printemps",
                 "summer": "été", "autumn": "automne", "winter": "hiver"},
        units={"day": "jour|jours", "week": "semaine|semaines", "month": "mois",
               "year": "an|ans|année|années"},
        numbers="un|une|deux|trois|quatre|cinq|six|sept|huit|neuf|dix|onze|douze",
        ago="il y a|il ya|y a|y'a|ya", ahead="dans", ago_as="il y a {}", ahead_as="dans {}",
        guards={"summer": r"(?<=\b(?:l'|cet ))"}),  # j'ai été dernier: I came last
    "es": Words(
        days={-2: "anteayer|antier|antes de ayer", -1: "ayer|anoche", 1: "mañana",
              2: "pasado mañana"},
        before={"last": "pasado|pasada", "next": "próximo|próxima", "this": "este|esta"},
        after={"last": "pasado|pasada", "next": "que viene|próximo|próxima"},
        periods={"week": "semana", "weekend": "fin de semana|finde", "month": "mes",
                 "year": "año", "monday": "lunes", "tuesday": "martes",
                 "wednesday": "miércoles", "thursday": "jueves", "friday": "viernes",
                 "saturday": "sábado", "sunday": "domingo", "spring": "primavera",
                 "summer": "verano", "autumn": "otoño", "winter": "invierno"},
        units={"day": "día|días", "week": "semana|semanas", "month": "mes|meses",
               "year": "año|años"},
        numbers="un|una|uno|dos|tres|cuatro|cinco|seis|siete|ocho|nueve|diez",
        ago="hace", ahead="dentro de|en", ago_as="hace {}", ahead_as="dentro de {}",
        guards={1: r"(?<!\b(?:la|esta|esa|aquella|una|cada|media|buena|misma|otra|el) )"}),
    "it": Words(
        days={-2: "l'altro ieri|l'altroieri|ieri l'altro|altroieri|avantieri", -1: "ieri",
              1: "domani", 2: "dopodomani"},
        before={"last": "scorso|scorsa", "next": "prossimo|prossima",
                "this": "questo|questa|quest'"},
        after={"last": "scorso|scorsa|passato|passata", "next": "prossimo|prossima"},
        periods={"week": "settimana", "weekend": "weekend|week-end|fine settimana",
                 "month": "mese", "year": "anno", "monday": "lunedì", "tuesday": "martedì",
                 "wednesday": "mercoledì", "thursday": "giovedì", "friday": "venerdì",
                 "saturday": "sabato", "sunday": "domenica", "spring": "primavera",
                 "summer": "estate", "autumn": "autunno", "winter": "inverno"},
        units={"day": "giorno|giorni", "week": "settimana|settimane", "month": "mese|mesi",
               "year": "anno|anni"},
        numbers="un|uno|una|due|tre|quattro|cinque|sei|sette|otto|nove|dieci",
        ago="", ago_after="fa", ahead="tra|fra", ago_as="{} fa", ahead_as="tra {}",
        guards={1: r"(?<!\b(?:il|un) )"}),  # il domani: the future
    "pt": Words(
        days={-2: "anteontem", -1: "ontem", 1: "amanhã", 2: "depois de amanhã"},
        before={"last": "passado|passada", "next": "próximo|próxima",
                "this": "este|esta|neste|nesta"},
        after={"last": "passado|passada", "next": "que vem|próximo|próxima"},
        periods={"week": "semana", "weekend": "fim de semana", "month": "mês", "year": "ano",
                 "monday": "segunda-feira|segunda", "tuesday": "terça-feira|terça",
                 "wednesday": "quarta-feira|quarta", "thursday": "quinta-feira|quinta",
                 "friday": "sexta-feira|sexta", "saturday": "sábado", "sunday": "domingo",
                 "spring": "primavera", "summer": "verão", "autumn": "outono",
                 "winter": "inverno"},
        units={"day": "dia|dias", "week": "semana|semanas", "month": "mês|meses",
               "year": "ano|anos"},
        numbers="um|uma|dois|duas|três|quatro|cinco|seis|sete|oito|nove|dez",
        ago="há|faz", ago_after="atrás", ahead="daqui a|dentro de|em", ago_as="há {}",
        ahead_as="em {}", guards={1: r"(?<!\b(?:o|um) )"}),  # o amanhã: the future
}
"""By language code, as dateparser names the language."""

DIGITS = {"un": 1, "uno": 1, "una": 1, "um": 1, "uma": 1, "dos": 2, "due": 2, "dois": 2,
          "duas": 2, "tres": 3, "tre": 3, "cuatro": 4, "quattro": 4, "quatro": 4, "cinco": 5,
          "cinque": 5, "seis": 6, "sei": 6, "siete": 7, "sette": 7, "sete": 7, "ocho": 8,
          "otto": 8, "oito": 8, "nueve": 9, "nove": 9, "diez": 10, "dieci": 10, "dez": 10}
"""Counts dateparser 1.5 does not read (Spanish, Italian and Portuguese; it reads German
and French ones), by their words without accents."""

FRENCH = "je|j'|tu|nous|vous|il|elle|on|c'|est|et|le|la|les|une|des|du|au|avec|pour|pas|" \
         "mais|très|soir|matin|suis|ai|avons"
GERMAN = "ich|du|wir|ihr|ist|bin|bist|sind|und|nicht|das|der|die|dem|den|ein|eine|mit|auf|" \
         "auch|noch|schon|war|habe|hab|hat"
"""Common words of each: "hier" is yesterday in a French text, here in a German one."""
