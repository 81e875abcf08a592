"""Relative times grounded in dates: "yesterday" said on 8 May 2023 reads
"yesterday (7 May 2023)" in the memory, so a question about the date finds it written.

A closed set of expressions in English, German, French, Spanish, Italian and Portuguese
(`timewords`), found by two patterns (English; the others), then those of the other
languages dateparser reads (`timephrases`: "вчера", "昨天", "geçen ay"), resolved against
the moment the words were said: days (yesterday, tomorrow, N days ago, in N days, last/next/this
Friday) to a date; weeks and weekends to "the week of" a date; months, seasons and years to
their name, always written in English. Calendar arithmetic resolves all but the other
languages' counts ("vor drei Tagen"), which dateparser reads. Words already followed by a
parenthesis are left alone, so grounding twice changes nothing.
"""

from __future__ import annotations

import unicodedata
from calendar import month_name
from datetime import date, datetime, time, timedelta

import regex

from . import timephrases
from .dates import format_date
from .timewords import DIGITS, FRENCH, GERMAN, LANGUAGES, Words

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10}
"""Counts that name a number ("a few days ago" names none, so it is left as said)."""
_COUNT = r"(?P<n>\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_PATTERN = regex.compile(
    r"\b(?:"
    r"(?P<day>the day before yesterday|the day after tomorrow|yesterday|today|tonight|"
    r"tomorrow|last night|this morning|this afternoon|this evening)"
    r"|(?<!\bthe )(?P<rel>last|next|this) (?P<what>" + "|".join(WEEKDAYS)
    + r"|week|weekend|month|year|" + "|".join(SEASONS) + r")"
    r"|" + _COUNT + r" " + _UNIT + r" (?P<ago>ago|from now)"
    # "in 3 weeks" lies ahead ("won't be ready in 3 weeks" too), not after a perfect's
    # negation or a first time: "haven't smoked in 3 weeks", "not one drink in a month",
    # "first run in two years" look back over them
    r"|(?<!(?:\bha(?:ve|s|d)n't|\bha(?:ve|s|d) not|\bnever|\bnot (?:a|one|once|a single)|"
    r"\bno)\b[^.!?,;:]{0,40}|\bfirst time )in "
    + _COUNT.replace("?P<n>", "?P<n2>") + r" (?P<unit2>day|week|month|year)s?(?! ago)"
    r")\b(?! *\()",
    regex.IGNORECASE)


def _typed(fragment: str) -> str:
    """`fragment` as people type it: accents optional ("mañana" finds "manana", "ü" also
    "ue"), either apostrophe, a hyphen also a space or nothing."""
    out = []
    for char in fragment:
        plain = unicodedata.normalize("NFD", char)[0]
        if char == "'":
            out.append("['’]")
        elif char == "-":
            out.append("[- ]?")
        elif plain != char:
            out.append(f"(?:{char}|{plain}e|{plain})" if char in "äöü" else f"(?:{char}|{plain})")
        else:
            out.append(char)
    return "".join(out)


def _either(table: dict, guards: dict | None = None) -> str:
    """The words of `table` as one alternation, longest first, each behind its guard."""
    items = sorted(((item, meaning) for meaning, words in table.items()
                    for item in words.split("|")), key=lambda pair: -len(pair[0]))
    return "(?:" + "|".join(_typed((guards or {}).get(meaning, "") + item)
                            for item, meaning in items) + ")"


def _language(code: str, words: Words) -> str:
    """One language's relative times, in a group named by its code."""
    periods = _either(words.periods, words.guards)
    count = (rf"(?P<n>\d{{1,2}}|{_either({'count': words.numbers})})\s+"
             rf"(?P<unit>{_either(words.units)})")
    forms = [rf"(?P<day>{_either(words.days, words.guards)})",
             rf"(?P<pre>{_either(words.before, words.guards)})(?:\s+|(?<=['’]))(?P<what>{periods})",
             rf"(?P<ahead>{_typed(words.ahead)})\s+{count}"]
    if words.after:
        forms.append(rf"(?P<what>{periods})\s+(?P<post>{_either(words.after, words.guards)})")
    if words.ago_after:  # "tre giorni fa"; "há três dias atrás" says it twice
        forms.append(rf"{count}\s+(?P<ago>{_typed(words.ago_after)})")
    if words.ago:
        twice = rf"(?:\s+{_typed(words.ago_after)})?" if words.ago_after else ""
        forms.append(rf"(?P<ago>{_typed(words.ago)})\s+{count}{twice}")
    return rf"(?P<{code}>" + "|".join(forms) + ")"


_OTHER = regex.compile(
    r"\b(?:" + "|".join(_language(code, words) for code, words in LANGUAGES.items())
    + r")\b(?! *\()(?!-)",  # "cette semaine-là" is that week, not this one
    regex.IGNORECASE)
_PLAIN = str.maketrans("àáâãäçèéêëìíîïñòóôõöùúûü’", "aaaaaceeeeiiiinooooouuuu'")
_UMLAUTS = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue"})
_TOKEN = regex.compile(r"\w+")
_FRENCH = regex.compile(rf"\b(?:{_typed(FRENCH)})\b", regex.IGNORECASE)
_GERMAN = regex.compile(rf"\b(?:{GERMAN})\b", regex.IGNORECASE)


def _key(said: str) -> str:
    """`said` as the tables are looked up: lowercase, without accents, hyphens or spaces."""
    return said.lower().translate(_PLAIN).replace("-", "").replace(" ", "")


def _spellings(table: dict) -> dict[str, int | str]:
    """The meaning of each of `table`'s words by its key, umlauts also as "ae"."""
    return {_key(spelling): meaning for meaning, words in table.items()
            for item in words.split("|") for spelling in {item, item.translate(_UMLAUTS)}}


_MEANINGS = {code: {name: _spellings(getattr(words, name))
                    for name in ("days", "before", "after", "periods", "units")}
             for code, words in LANGUAGES.items()}


def _keys() -> frozenset[str]:
    """A word of each day, period and unit as typed (lowercase, without accents): every
    other-language time holds one, so a text without any is not searched."""
    keys = set()
    for words in LANGUAGES.values():
        for table in (words.days, words.periods, words.units):
            for item in "|".join(table.values()).split("|"):
                for spelling in {item, item.translate(_UMLAUTS)}:
                    typed = spelling.translate(_PLAIN)
                    for joined in (typed, typed.replace("-", "")):
                        keys.add(max(_TOKEN.findall(joined), key=len))
    return frozenset(keys)


_KEYS = _keys()


def ground(text: str, when: datetime | date | None) -> str:
    """`text` with each relative time it holds followed by what it meant on `when`
    (unchanged when `when` is None or nothing relative is said)."""
    if when is None:
        return text
    day = when.date() if isinstance(when, datetime) else when
    text = _PATTERN.sub(lambda found: _with_date(found, day), text)
    if _may_say_other(text):
        text = _OTHER.sub(lambda found: _with_date(found, day), text)
    said = []
    for found, phrases in reversed(timephrases.find(text)):
        meant = _phrase_date(phrases.meaning(found), day)
        said.append(f" ({meant})")
        text = text[:found.end()] + said[-1] + text[found.end():]
    return text


def find_relative(text: str) -> regex.Match | None:
    """The first relative time `text` says in English, else in another language it reads,
    not yet grounded (for `resolve`)."""
    found = _PATTERN.search(text)
    if found is None and _may_say_other(text):
        found = next((m for m in _OTHER.finditer(text) if not _here(m)), None)
    if found is None:
        found = next((m for m, _ in timephrases.find(text)), None)
    return found


def ahead(found: regex.Match) -> bool:
    """Whether a relative time `find_relative` found lies ahead of when it was said ("next
    week", "tomorrow", "in three days", "l'année prochaine", "nächste Woche")."""
    if found.re not in (_PATTERN, _OTHER):
        return _told(found)[0].step > 0
    if found.re is _OTHER:
        meanings = _MEANINGS[next(code for code in LANGUAGES if found[code])]
        if found["day"]:
            return not _here(found) and meanings["days"][_key(found["day"])] > 0
        if found["what"]:
            return (meanings["before"][_key(found["pre"])] if found["pre"]
                    else meanings["after"][_key(found["post"])]) == "next"
        return not found["ago"]
    if found["day"]:
        return found["day"].lower() in ("tomorrow", "the day after tomorrow")
    if found["rel"]:
        return found["rel"].lower() == "next"
    return not found["n"] or found["ago"].lower() == "from now"


def _may_say_other(text: str) -> bool:
    """Whether `text` holds a word of `_KEYS` (a set lookup: a tenth of the pattern's cost)."""
    return not _KEYS.isdisjoint(_TOKEN.findall(text.lower().translate(_PLAIN)))


def _with_date(found: regex.Match, day: date) -> str:
    meant = resolve(found, day)
    return f"{found[0]} ({meant})" if meant else found[0]


def resolve(found: regex.Match, day: date) -> str | None:
    """What one matched expression meant on `day`, as words ("7 May 2023", "the week of
    1 May 2023", "April 2023", "summer 2022", "2022"); None for "today" and the like."""
    if found.re not in (_PATTERN, _OTHER):
        return _phrase_date(_told(found), day)
    if found.re is _OTHER:
        return _resolve_other(found, day)
    if found["day"]:
        shift = {"the day before yesterday": -2, "yesterday": -1, "last night": -1,
                 "tomorrow": 1, "the day after tomorrow": 2}.get(found["day"].lower())
        return format_date(day + timedelta(days=shift)) if shift else None
    if found["rel"]:
        return _relative(found["rel"].lower(), found["what"].lower(), day)
    if found["n"]:
        sign = 1 if found["ago"].lower() == "from now" else -1
        return _shifted(day, sign * _count(found["n"]), found["unit"].lower())
    return _shifted(day, _count(found["n2"]), found["unit2"].lower())


def _count(words: str) -> int:
    words = words.lower()
    return int(words) if words.isdigit() else NUMBERS[words]


def _relative(rel: str, what: str, day: date) -> str | None:
    step = {"last": -1, "next": 1}.get(rel, 0)
    if what in WEEKDAYS:
        target = WEEKDAYS.index(what)
        if step < 0:  # the latest such day before `day`
            back = (day.weekday() - target) % 7 or 7
            return format_date(day - timedelta(days=back))
        ahead = (target - day.weekday()) % 7 or (7 if step > 0 else 0)
        return format_date(day + timedelta(days=ahead))
    if what in ("week", "weekend"):
        monday = day - timedelta(days=day.weekday()) + timedelta(weeks=step)
        if what == "weekend":
            return f"the weekend of {format_date(monday + timedelta(days=5))}"
        return f"the week of {format_date(monday)}"
    if what == "month":
        return _month(day, step)
    if what == "year":
        return str(day.year + step)
    return f"{what} {_season_year(SEASONS[what], step, day)}"


def _season_year(start: int, step: int, day: date) -> int:
    """The year of the season starting in month `start`: the last one over before `day`
    (step -1), the next one to begin after it (1), or the one of `day`'s year (0)."""
    now = day.year * 12 + day.month
    if step < 0:
        return (now - start - 3) // 12
    if step > 0:
        return (now - start) // 12 + 1
    return day.year - 1 if start == 12 and day.month <= 2 else day.year


def _shifted(day: date, amount: int, unit: str) -> str:
    if unit == "day":
        return format_date(day + timedelta(days=amount))
    if unit == "week":
        return format_date(day + timedelta(weeks=amount))
    if unit == "month":
        return _month(day, amount)
    return str(day.year + amount)


def _month(day: date, step: int) -> str:
    index = day.year * 12 + day.month - 1 + step
    return f"{month_name[index % 12 + 1]} {index // 12}"


def _resolve_other(found: regex.Match, day: date) -> str | None:
    code = next(code for code in LANGUAGES if found[code])
    words, meanings = LANGUAGES[code], _MEANINGS[code]
    if found["day"]:
        shift = meanings["days"][_key(found["day"])]
        return None if _here(found) else format_date(day + timedelta(days=shift))
    if found["what"]:
        step = (meanings["before"][_key(found["pre"])] if found["pre"]
                else meanings["after"][_key(found["post"])])
        return _relative(step, meanings["periods"][_key(found["what"])], day)
    count = f"{DIGITS.get(_key(found['n']), found['n'])} {found['unit']}"
    said = _dateparsed((words.ago_as if found["ago"] else words.ahead_as).format(count),
                       code, day)
    if said is None:
        return None
    unit = meanings["units"][_key(found["unit"])]
    if unit == "month":
        return f"{month_name[said.month]} {said.year}"
    return str(said.year) if unit == "year" else format_date(said)


def _here(found: regex.Match) -> bool:
    """A "hier" in a text that does not read as French: here (German, Dutch), not yesterday."""
    return bool(found["fr"] and found["day"] and _key(found["day"]) == "hier"
                and len(_FRENCH.findall(found.string)) <= len(_GERMAN.findall(found.string)))


def _dateparsed(phrase: str, language: str, day: date) -> date | None:
    """The day dateparser reads `phrase` as, said on `day` (imported on first use: it takes
    a tenth of a second)."""
    from dateparser.date import DateDataParser

    settings = {"RELATIVE_BASE": datetime.combine(day, time()), "PARSERS": ["relative-time"]}
    read = DateDataParser(languages=[language], settings=settings).get_date_data(phrase)
    return read.date_obj.date() if read.date_obj else None


def _told(found: regex.Match) -> tuple[timephrases.Meaning, int]:
    """What a phrase of `timephrases` says, and its count."""
    phrases = next(p for m, p in timephrases.find(found.string) if m.span() == found.span())
    return phrases.meaning(found)


def _phrase_date(told: tuple[timephrases.Meaning, int], day: date) -> str:
    """What a phrase of `timephrases` meant on `day`: "last week" the week before this one,
    "three weeks ago" 21 days before, written as `resolve` writes English ones."""
    meaning, count = told
    step = meaning.step * count
    if meaning.unit == "day":
        return format_date(day + timedelta(days=step))
    if meaning.unit == "week" and meaning.period:
        monday = day - timedelta(days=day.weekday()) + timedelta(weeks=step)
        return f"the week of {format_date(monday)}"
    return _shifted(day, step, meaning.unit)
