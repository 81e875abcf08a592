""""Event date in context": for a question whose gold answer is one calendar date ("7 May
2023", not "the week before 9 June 2023"), is that date written, in any common format, in
the hits that fit the word budget?"""

from __future__ import annotations

from calendar import month_abbr, month_name
from collections.abc import Sequence
from datetime import date

import regex

from .metrics import RankedUnit, fitting

_MONTHS = {name.lower(): n for n in range(1, 13) for name in (month_name[n], month_abbr[n])}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ANSWER = regex.compile(
    rf"^(?:on\s+)?(?:(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m>{_MONTH})\.?,?\s+(?P<y>\d{{4}})"
    rf"|(?P<m2>{_MONTH})\.?\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y2>\d{{4}}))\.?$",
    regex.IGNORECASE)


def calendar_date(answer: str) -> date | None:
    """The date a gold answer names when it is exactly one calendar date, else None."""
    found = _ANSWER.match(answer.strip())
    if not found:
        return None
    day, month, year = (found["d"], found["m"], found["y"]) if found["d"] else \
        (found["d2"], found["m2"], found["y2"])
    try:
        return date(int(year), _MONTHS[month.lower()], int(day))
    except ValueError:
        return None


def date_pattern(day: date) -> regex.Pattern:
    """`day` as people write it: 7 May 2023, 7th May, 2023, May 7, 2023, 2023-05-07, 07/05/2023."""
    months = f"(?:{month_name[day.month]}|{month_abbr[day.month]})\\.?"
    d = f"0?{day.day}(?:st|nd|rd|th)?"
    return regex.compile(
        rf"\b(?:{d}\s+(?:of\s+)?{months},?\s+{day.year}|{months}\s+{d},?\s+{day.year}"
        rf"|{day.year}-{day.month:02d}-{day.day:02d}|0?{day.day}/0?{day.month}/{day.year})\b",
        regex.IGNORECASE)


def date_in_context(ranked: Sequence[RankedUnit], day: date, budget: int = 1000) -> float:
    """1 when `day` is written in the hits that fit `budget` words (strict, as Rtok)."""
    taken, _ = fitting(ranked, budget)
    pattern = date_pattern(day)
    return float(any(pattern.search(text) for text, _ in ranked[:taken]))
