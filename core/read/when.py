"""Questions that name a time ("in October 2023", "on May 3, 2023", "last summer") prefer
the memories of that time: said then, or saying a date of it.

Absolute dates are read as written; relative ones are resolved by `language.timeref` against
the moment the question is asked about (`as_of`, else now), as they are when memories are
written. A month without a year ("camping in June") matches that month of any year.
"""

from __future__ import annotations

from calendar import month_name, monthrange
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache

import regex

from ..language.timeref import SEASONS, find_relative, resolve
from ..types import Memory, MemoryHit

WINDOW = 30
"""Top hits reordered: deep enough to lift a memory of the named time that ranked lower
on the words alone, shallow enough that it stays relevant to the rest of the question."""
LIFT = 10
"""Ranks a memory of the named time moves up (among the top `WINDOW`): about a page of hits.
Of 3, 5 and 10 on LoCoMo dev, 10 gained most on questions naming a time and lost nothing
elsewhere; moving such memories above all others lost (it lifts the wrong ones too)."""

_MONTHS = {name.lower(): i for i, name in enumerate(month_name) if name}
_MONTHS.update({name[:3]: i for name, i in list(_MONTHS.items())} | {"sept": 9})
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATE = regex.compile(
    r"\b(?:(?P<d1>\d{1,2})(?:st|nd|rd|th)? (?P<m1>" + _MONTH + r"),? (?P<y1>\d{4})"
    r"|(?P<m2>" + _MONTH + r") (?P<d2>\d{1,2})(?:st|nd|rd|th)?,? (?P<y2>\d{4})"
    r"|(?P<week>the (?:week|weekend) of )?(?P<d3>\d{1,2}) (?P<m3>" + _MONTH + r") (?P<y3>\d{4})"
    r"|(?P<m4>" + _MONTH + r"),? (?P<y4>\d{4})"
    r"|(?P<season>spring|summer|autumn|fall|winter),? (?:of )?(?P<y5>\d{4})"
    r"|(?:in|during|of|since) (?P<y6>(?:19|20)\d\d)"
    r"|(?:in|during|early|late|mid|mid-) (?P<m7>" + _MONTH + r")(?!\.?,? ?\d))\b",
    regex.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Period:
    """Days from `start` to `end` (inclusive); `month` alone: that month of any year."""

    start: date | None = None
    end: date | None = None
    month: int | None = None

    def holds(self, day: date) -> bool:
        if self.month is not None:
            return day.month == self.month
        return self.start <= day <= self.end

    def overlaps(self, other: Period) -> bool:
        if self.month is not None or other.month is not None:
            months = {self.month, other.month} - {None}
            return len(months) == 1 and all(
                p.month is not None or _spans_month(p, next(iter(months)))
                for p in (self, other))
        return self.start <= other.end and other.start <= self.end


def named_period(query: str, now: datetime | date) -> Period | None:
    """The time a question names, if it names one: its first date, month, season or year,
    a relative one resolved against `now`."""
    day = now.date() if isinstance(now, datetime) else now
    relative = find_relative(query)
    if relative is not None:
        meant = resolve(relative, day) or ""
        if meant.isdigit():  # "last year"
            return Period(date(int(meant), 1, 1), date(int(meant), 12, 31))
        found = _DATE.search(meant)
        if found:
            return _period(found)
    found = _DATE.search(query)
    return _period(found) if found else None


def prefer_period(hits: Sequence[MemoryHit], period: Period) -> list[MemoryHit]:
    """The hits with each memory of `period` among the top `WINDOW` moved up `LIFT` ranks
    (a memory of that time is preferred, not placed above everything else)."""
    head = list(hits[:WINDOW])
    inside = [of_period(h.memory, period) for h in head]
    if not any(inside) or all(inside):
        return list(hits)
    order = sorted(range(len(head)), key=lambda i: (i - LIFT if inside[i] else i, not inside[i]))
    return [*(head[i] for i in order), *hits[WINDOW:]]


def of_period(memory: Memory, period: Period) -> bool:
    """Whether the memory was said in `period` or names a date of it."""
    said = memory.occurred_at
    if said is not None and period.holds(said.date()):
        return True
    return any(period.overlaps(p) for p in _periods_in(memory.text))


@lru_cache(maxsize=8192)
def _periods_in(text: str) -> tuple[Period, ...]:
    return tuple(p for p in map(_period, _DATE.finditer(text)) if p is not None)


def _period(found: regex.Match) -> Period | None:
    try:
        if found["d1"] or found["d2"] or found["d3"]:
            day = date(int(found["y1"] or found["y2"] or found["y3"]),
                       _month(found["m1"] or found["m2"] or found["m3"]),
                       int(found["d1"] or found["d2"] or found["d3"]))
            if found["week"]:
                return Period(day, day + timedelta(days=6))
            return Period(day - timedelta(days=1), day + timedelta(days=1))
        if found["m4"]:
            return _whole_month(int(found["y4"]), _month(found["m4"]))
        if found["season"]:
            first = SEASONS[found["season"].lower()]
            start = date(int(found["y5"]), first, 1)
            last = first + 2
            end_year = start.year + (last - 1) // 12
            end_month = (last - 1) % 12 + 1
            return Period(start, date(end_year, end_month, monthrange(end_year, end_month)[1]))
        if found["y6"]:
            year = int(found["y6"])
            return Period(date(year, 1, 1), date(year, 12, 31))
        return Period(month=_month(found["m7"]))
    except ValueError:  # "31 February 2023"
        return None


def _month(name: str) -> int:
    return _MONTHS[name.lower().rstrip(".")]


def _whole_month(year: int, month: int) -> Period:
    return Period(date(year, month, 1), date(year, month, monthrange(year, month)[1]))


def _spans_month(period: Period, month: int) -> bool:
    """Whether a dated period touches `month` (of any year)."""
    day = period.start
    while day <= period.end:
        if day.month == month:
            return True
        day = (day.replace(day=1) + timedelta(days=32)).replace(day=1)
    return False
