"""The values a text states, of kinds any language writes alike: a contact (an email, a
handle, a phone number), a time of day, a weekday and a date of the six languages the rules
read, a number with what it counts. A value said in place of another of the same kind is a
change of it (`change`); the words around it are left to the claims."""

from __future__ import annotations

from functools import lru_cache

import regex

from .languages import stop_words_of
from .stance import STEM

_FLAGS = regex.IGNORECASE
"""Simple case folding: VERSION1's full folding made the contact pattern scan each word
again at every letter (4.5 ms for a 400-character message against 0.4)."""

MONTHS = frozenset(w[:STEM] for w in (
    "january february march april may june july august september october november december "
    "januar februar märz juni juli oktober dezember janvier février mars avril mai juin "
    "juillet août septembre octobre novembre décembre enero febrero marzo abril mayo junio "
    "julio agosto septiembre octubre noviembre diciembre gennaio febbraio aprile maggio "
    "giugno luglio settembre ottobre dicembre janeiro fevereiro março maio junho julho "
    "setembro outubro novembro dezembro").split())
"""Month names: a date is its day and month together (`values`), "March" alone names none."""


_WEEKDAYS = (
    "monday tuesday wednesday thursday friday saturday sunday "
    "montag dienstag mittwoch donnerstag freitag samstag sonntag "
    "lundi mardi mercredi jeudi vendredi samedi dimanche "
    "lunes martes miércoles jueves viernes sábado domingo "
    "lunedì martedì mercoledì giovedì venerdì sabato domenica "
    "segunda terça quarta quinta sexta sábado domingo").split()
_VALUE = regex.compile(
    r"(?P<contact>[\w.+-]+@[\w-]+(?:\.[\w-]+)+|@\w{3,}|\+?\d[\d\s().-]{6,}\d)|"
    r"(?P<time>\b\d{1,2}(?::\d\d|h\d\d)\b|\b\d{1,2}\s?(?:am|pm|a|p)\b|"
    r"(?<=\b(?:at|um|à|a las|alle|às) )\d{1,2}\b(?![.,:]?\d|\s*(?:years?|yrs?|months?|"
    r"days?|weeks?|%|Jahre\w*|ans|años|anni|anos)))|"
    r"(?P<day>\b(?:" + "|".join(w[:5] for w in _WEEKDAYS) + r")\w*)|"
    r"(?P<date>\b(?:" + "|".join(sorted(MONTHS)) + r")\w*\.?\s+\d{1,2}(?:st|nd|rd|th)?\b|"
    r"\b\d{1,2}(?:st|nd|rd|th|\.)?\s+(?:de\s+)?(?:" + "|".join(sorted(MONTHS)) + r")\w*)|"
    r"(?P<number>(?<![\w.])[$€£]?\d+(?:[.,\s]\d{3})*(?:[.,]\d+)?)(?:\s?(?P<unit>%|[^\W\d_]{1,12}))?",
    _FLAGS)
"""Values of a kind any language writes alike: contacts (an email, a handle, a phone number),
times of day, weekdays (in the six languages read) and numbers with the word after them. A
contact said in place of another is a new value whatever else is said; the others only
beside a word that says what holds now (`_NOW`)."""


_LETTERS, _DIGITS = regex.compile(r"\p{L}+"), regex.compile(r"\d+")


@lru_cache(maxsize=8192)
def values(text: str) -> frozenset[tuple[str, str]]:
    """(kind, value) of the typed values `text` states; a number's kind is its unit. Cached:
    the read-time versions step weighs the same memories' texts question after question."""
    out = set()
    for found in _VALUE.finditer(text):
        kind = found.lastgroup if found["number"] is None else "number"
        value = found[0].lower()
        if kind == "number":
            number = regex.sub(r"\D", "", found["number"])
            out.update((f"number {unit}", number) for unit in _units(found, text))
            continue
        elif kind == "day":
            value = value[:5]
        elif kind == "date":
            month = next(w for w in _LETTERS.findall(value) if w not in ("st", "nd", "rd",
                                                                           "th", "de"))
            value = month[:STEM] + " " + _DIGITS.search(value)[0]
        out.add((kind, value))
    return frozenset(out)


def _units(found: regex.Match, text: str) -> list[str]:
    """What a number counts: its currency ("$40,000"), the letters glued to it ("250ms"),
    else the words after it that are no stop words, up to two ("2,000 newsletter
    subscribers" counts subscribers too); none for a bare number ("2009", "6 of them")."""
    if found["number"][0] in "$€£":
        return [found["number"][0]]
    if found["unit"] and not text[found.start("unit") - 1:found.start("unit")].isspace():
        return [found["unit"].lower()[:STEM]]
    stops = stop_words_of(None)
    after = _LETTERS.findall(text[found.end("number"):found.end("number") + 40])[:2]
    return [w.lower()[:STEM] for w in after if w.lower() not in stops]
