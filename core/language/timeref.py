"""Relative times grounded in dates: "yesterday" said on 8 May 2023 reads
"yesterday (7 May 2023)" in the memory, so a question about the date finds it written.

A closed set of English expressions, found by one pattern and resolved by calendar
arithmetic against the moment the words were said: days (yesterday, tomorrow, N days ago,
in N days, last/next/this Friday) to a date; weeks and weekends to "the week of" a date;
months, seasons and years to their name. Words already followed by a parenthesis are left
alone, so grounding twice changes nothing.
"""

from __future__ import annotations

from calendar import month_name
from datetime import date, datetime, timedelta

import regex

from .dates import format_date

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
    r"|in " + _COUNT.replace("?P<n>", "?P<n2>") + r" (?P<unit2>day|week|month|year)s?"
    r")\b(?! *\()",
    regex.IGNORECASE)


def ground(text: str, when: datetime | date | None) -> str:
    """`text` with each relative time it holds followed by what it meant on `when`
    (unchanged when `when` is None or nothing relative is said)."""
    if when is None:
        return text
    day = when.date() if isinstance(when, datetime) else when
    return _PATTERN.sub(lambda found: _with_date(found, day), text)


def find_relative(text: str) -> regex.Match | None:
    """The first relative time `text` says, not yet grounded (for `resolve`)."""
    return _PATTERN.search(text)


def _with_date(found: regex.Match, day: date) -> str:
    meant = resolve(found, day)
    return f"{found[0]} ({meant})" if meant else found[0]


def resolve(found: regex.Match, day: date) -> str | None:
    """What one matched expression meant on `day`, as words ("7 May 2023", "the week of
    1 May 2023", "April 2023", "summer 2022", "2022"); None for "today" and the like."""
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
