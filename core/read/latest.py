"""The latest value first: when two of a question's top hits state different values of what
it asks about ("3 interviews", later "5 interviews"), the later one is read first.

Supersession links such pairs when they are written, but only where the rules can tell what
a value is a value of; the question says it at read time. The rule is narrow: a question
about the present, the same person's stated facts (not plans or questions), values of one
kind and unit in a clause that shares a word with the question, and the later hit lower in
the ranking.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import datetime
from functools import lru_cache

from ..language.claims import claims, topics_of
from ..types import Memory, MemoryHit, as_utc

WINDOW = 8
"""Top hits compared: an update ranked lower than this is too far to matter to a reader."""

ASKS_VALUE = re.compile(r"^\W*(?:what|when|how (?:many|much|long|often|far|big|fast))\b",
                        re.IGNORECASE)
"""A question for a value: what it is, when, how many or how much."""
NOT_NOW = re.compile(r"\b(?:did|was|were|had|used to|ever|between|first|order|before|since|"
                     r"each|every|all|different)\b", re.IGNORECASE)
"""Words of a question about the past, about every value it had, or about how values
relate: the older values are part of its answer."""

Stated = frozenset[tuple[str, str, str]]
"""(subject, kind and unit, value) of the values a memory states in clauses sharing a word
with the question."""


def latest_first(hits: Sequence[MemoryHit], query: str, *,
                 assistants: Collection[str] = ("assistant",)) -> list[MemoryHit]:
    """`hits` with each hit of the top `WINDOW` that states a newer value of what `query`
    asks about moved right before the first higher hit stating an older one."""
    if not ASKS_VALUE.search(query) or NOT_NOW.search(query):
        return list(hits)
    asked = topics_of(query)
    if not asked:
        return list(hits)
    skip = tuple(sorted(a.casefold() for a in assistants))
    head = list(hits[:WINDOW])
    stated = {h.memory.id: _stated(h.memory, asked, skip) for h in head}
    order = list(head)
    for _ in range(len(order)):  # a moved hit can let a newer one past it in turn
        if not _move_one(order, stated, asked):
            break
    return [*order, *hits[WINDOW:]]


def _move_one(order: list[MemoryHit], stated: dict[str, Stated], asked: frozenset[str]
              ) -> bool:
    """Move the first hit that replaces a higher, older one right before it."""
    for at, hit in enumerate(order):
        mine = stated[hit.memory.id]
        for i, higher in enumerate(order[:at] if mine else ()):
            if _moment(hit.memory) > _moment(higher.memory) and _replaces(
                    mine, stated[higher.memory.id], asked):
                order.insert(i, order.pop(at))
                return True
    return False


def _replaces(new: Stated, old: Stated, asked: frozenset[str]) -> bool:
    """Whether `new` states, for a subject and unit `old` states a value of, another value.
    A number said without its unit ("has increased to 7") counts what the question names."""
    slots = {(s, u) for s, u, _ in old}
    return any(((s, u) in slots or u == "number:" and v.isdigit() and any(
        s == os and ou.partition(":")[2] in asked for os, ou in slots))
        and (s, u, v) not in old for s, u, v in new)


def _moment(memory: Memory) -> tuple[datetime, datetime]:
    """When it was said; memories of one session were written in the order they were said."""
    return as_utc(memory.valid_from), as_utc(memory.created_at)


@lru_cache(maxsize=4096)
def _values(text: str, speakers: tuple[str, ...], skip: tuple[str, ...]
            ) -> tuple[tuple[str, str, str, frozenset[str]], ...]:
    """(subject, kind and unit, value, the clause's topics) of each number and date the
    text's stated facts hold."""
    return tuple((c.subject, v.kind + ":" + (_unit(v.text) if v.kind == "number" else ""),
                  v.text.partition(" ")[0] if v.kind == "number" else v.text, c.topics)
                 for c in claims(text, list(speakers), skip=skip, clauses=True)
                 if not c.hypothetical for v in c.values
                 if v.kind in ("number", "date") and not v.was)


def _unit(value: str) -> str:
    """What a number counts: "%" or letters glued to it ("250ms"), else the word after it."""
    number, _, after = value.partition(" ")
    glued = number.lstrip("0123456789.,:/$€£")
    return glued or after


def _stated(memory: Memory, asked: frozenset[str], skip: tuple[str, ...]) -> Stated:
    return frozenset((subject, unit, value) for subject, unit, value, about in _values(
        memory.text, tuple(memory.speakers or ["user"]), skip) if about & asked)
