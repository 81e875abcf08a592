"""What the feature reranker reads of a query and of a memory, each read once and cached:
content-word stems and pairs, numbers, names, whether a text speaks of a time, its date."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

from ..text import STOP_WORDS
from ..types import Memory

_WORD = re.compile(r"\w+")
_NAME = re.compile(r"\b[A-Z][\w'-]+")
_ASKS_WHEN = re.compile(
    r"\bwhen\b|\bhow long\b|\bwhat (?:date|day|year|month|time)\b|\bwhich (?:date|day|year|"
    r"month|week)\b|\bhow (?:many|much) (?:days|weeks|months|years)\b", re.IGNORECASE)
_MONTHS = ("january february march april may june july august september october november "
           "december").split()
_TIME = frozenset(
    "yesterday today tomorrow tonight ago last next recently weekend morning evening january "
    "february march april may june july august september october november december jan feb "
    "mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday "
    "saturday sunday week month year years months weeks days".split())
_PREFIX = 5
"""Words are compared by their first letters (a stemmer's poor cousin, at no cost)."""


@dataclass(frozen=True, slots=True)
class TextTraits:
    """What the features read of a text: its content-word stems and pairs of neighbouring
    ones, its numbers, whether it speaks of a time (a date word, a year, a day of the month)
    and its word count."""

    stems: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    numbers: frozenset[str]
    dated: bool
    words: int


@lru_cache(maxsize=4096)
def text_traits(text: str) -> TextTraits:
    """A text's traits, cached: the same memories come back search after search."""
    words = _WORD.findall(text.lower())
    content = [w[:_PREFIX] for w in words if w not in STOP_WORDS]
    numbers = frozenset(w for w in words if w.isdigit())
    dated = not _TIME.isdisjoint(words) or any(
        (len(n) == 4 and n[:2] in ("19", "20")) for n in numbers) or any(
        w[-2:] in ("st", "nd", "rd", "th") and w[:-2].isdigit() for w in words)
    return TextTraits(frozenset(content), frozenset(zip(content, content[1:])), numbers, dated,
                      len(words))


@dataclass(frozen=True, slots=True)
class MemoryTraits:
    """A memory's text traits, the stems of its speakers' names and its date as a UTC stamp
    (None when unknown; a date without a zone counts as UTC, like the stored ones)."""

    text: TextTraits
    speakers: frozenset[str]
    stamp: float | None
    month_year: tuple[int, int] | None


def memory_traits(memory: Memory) -> MemoryTraits:
    """A memory's traits, cached by its text, speakers and date (not its id: an edited
    memory is read again)."""
    return _memory_traits(memory.text, tuple(memory.speakers), memory.occurred_at)


@lru_cache(maxsize=4096)
def _memory_traits(text: str, speakers: tuple[str, ...], when: datetime | None
                   ) -> MemoryTraits:
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return MemoryTraits(text_traits(text), frozenset(s.lower()[:_PREFIX] for s in speakers),
                        None if when is None else when.timestamp(),
                        None if when is None else (when.month, when.year))


@dataclass(frozen=True, slots=True)
class QueryTraits:
    """What the features need of a query, read once per search."""

    text: TextTraits
    names: frozenset[str]
    asks_when: bool
    months: frozenset[int]
    years: frozenset[int]

    @classmethod
    def of(cls, query: str) -> QueryTraits:
        return _query_traits(query)

    def per_item(self, item: TextTraits) -> tuple[float, ...]:
        """The features of one text alone (`rerank_features.PER_ITEM`)."""
        return self.per_items([item])[0]

    def per_items(self, items: Sequence[TextTraits]) -> list[tuple[float, ...]]:
        """`per_item` of each text, in one pass (a search reads up to a hundred)."""
        query = self.text
        stems, pairs, names, numbers = query.stems, query.pairs, self.names, query.numbers
        n_stems, n_pairs, n_names = len(stems), len(pairs), len(names)
        when = self.asks_when
        return [(len(stems & t.stems) / n_stems if n_stems else 0.0,
                 len(pairs & t.pairs) / n_pairs if n_pairs else 0.0,
                 len(names & t.stems) / n_names if n_names else 0.0,
                 float(not numbers.isdisjoint(t.numbers)), float(t.dated and when),
                 float(t.dated)) for t in items]

    def date_match(self, month_year: tuple[int, int] | None) -> float:
        """1.0 when the query names a month or a year and (month, year) falls in it."""
        if month_year is None or not (self.months or self.years):
            return 0.0
        return float((not self.months or month_year[0] in self.months)
                     and (not self.years or month_year[1] in self.years))


@lru_cache(maxsize=256)
def _query_traits(query: str) -> QueryTraits:
    names = {n.lower()[:_PREFIX] for n in _NAME.findall(query) if n.lower() not in STOP_WORDS}
    text = text_traits(query)
    lower = set(_WORD.findall(query.lower()))
    return QueryTraits(text, frozenset(names), bool(_ASKS_WHEN.search(query)),
                       frozenset(i + 1 for i, m in enumerate(_MONTHS) if m in lower),
                       frozenset(int(n) for n in text.numbers
                                 if len(n) == 4 and n[:2] in ("19", "20")))


def share(wanted: frozenset, found: frozenset) -> float:
    """The part of `wanted` found in `found` (0 when nothing is wanted)."""
    return len(wanted & found) / len(wanted) if wanted else 0.0
