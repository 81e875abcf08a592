"""What is still true: hits ordered so that a superseded memory comes right after what
replaced it, each saying in words whether it changed, and the view as of a past date."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from ..language.claims import topics_of
from ..language.dates import format_date
from ..types import Memory, MemoryHit, as_utc

ABOUT_THE_PAST = re.compile(
    r"\b(?:before|used to|previous(?:ly)?|former(?:ly)?|original(?:ly)?|at first|"
    r"initial(?:ly)?|in the past|back then|back when|earlier|prior|old|first time|"
    r"at the (?:start|beginning)|order|sequence|summar\w*|progress\w*|over time|history|"
    r"timeline|throughout|evolv\w*|develop(?:ed|ment of))\b", re.IGNORECASE)
"""A question about how things were ("where did I live before Berlin?") or how they went
("the order in which...", "summarise how my project progressed"): its hits keep their
rank, the superseded memories are part of the answer."""

NOTE_WORDS = 16
"""Words quoted from a successor in a superseded hit's note: whole clauses while they fit,
a longer first clause whole up to twice as many."""
_CLAUSE_END = re.compile(r"(?<=[,;:.!?…])\s+")


def quote(text: str, most: int = NOTE_WORDS) -> str:
    """The start of `text` in whole clauses of at most `most` words in all (a first clause
    longer than that whole, up to `2 * most` words), " …" where it goes on."""
    clauses = _CLAUSE_END.split(" ".join(text.split()))
    taken: list[str] = []
    for clause in clauses:
        if taken and len(" ".join([*taken, clause]).split()) > most:
            break
        taken.append(clause)
    words = " ".join(taken).split()
    cut = words[:2 * most]
    return " ".join(cut) + (" …" if len(cut) < len(text.split()) else "")


def about_the_past(query: str) -> bool:
    return bool(ABOUT_THE_PAST.search(query))


def valid_at(memory: Memory, moment: datetime) -> bool:
    """Whether the memory was said by `moment` and not yet superseded then."""
    moment = as_utc(moment)
    return as_utc(memory.valid_from) <= moment and (
        memory.valid_to is None or as_utc(memory.valid_to) > moment)


def note(memory: Memory, as_of: datetime | None = None) -> str:
    """The words a hit adds about its memory's validity ('' for a memory current then:
    now, or at `as_of`)."""
    if memory.valid_to is None or as_of is not None and not as_utc(memory.valid_to) <= as_of:
        return ""
    said = quote(memory.changed_to or "")
    what = "partly changed" if memory.changed_part else "changed"
    arrow = f" → {said}" if said else ""
    return f" ({what} {format_date(memory.valid_to)}{arrow})"


def conflict_note(memory: Memory, dates: dict[str, datetime]) -> str:
    """The words a hit adds when another memory contradicts it ('' when none does)."""
    if not memory.conflicts:
        return ""
    when = sorted({format_date(dates[c]) for c in memory.conflicts if c in dates})
    return " (contradicted " + (f"on {', '.join(when)}" if when else "elsewhere") + \
        ": ask which holds)"


def arrange(hits: Sequence[MemoryHit], *, query: str, current_first: bool,
            as_of: datetime | None = None) -> list[MemoryHit]:
    """The same hits, every text noting its validity; and when the query asks about what
    changed (shares a topic with the changed words), with each superseded memory's successor
    (the current end of its chain among the hits) moved right before it (`current_first`).
    A successor the search did not keep is not brought in: the note quotes what changed it.
    A memory changed only in a part the query is not about gets no note (for this question
    it still holds). Contradicting memories keep their ranks and are flagged: moving one
    next to the other cost more evidence than it brought (BEAM both-sides 70 -> 60). With
    `as_of`, a change made after that moment is not noted: the memory still held then."""
    if not any(h.memory.valid_to or h.memory.conflicts for h in hits):
        return list(hits)
    asked = topics_of(query)
    asks = {h.memory.id: bool(asked & topics_of(  # is the query about what changed?
        " ".join(t for t in (h.memory.changed_part, h.memory.changed_to) if t)))
        for h in hits if h.memory.valid_to}
    by_id = {h.memory.id: h for h in hits}
    order: list[MemoryHit] = []
    placed: set[str] = set()

    def put(hit: MemoryHit) -> None:
        if hit.memory.id not in placed:
            placed.add(hit.memory.id)
            order.append(hit)

    for hit in hits:
        memory = hit.memory
        if current_first and asks.get(memory.id):
            for successor in reversed(_chain(memory, by_id)):
                put(successor)
        put(hit)
    dates = {h.memory.id: h.memory.valid_from for h in hits}
    moment = as_utc(as_of) if as_of is not None else None
    out = []
    for h in order:
        memory = h.memory
        changed = note(memory, moment) if not memory.changed_part or asks.get(memory.id) \
            else ""
        said = changed + conflict_note(memory, dates)
        out.append(replace(h, text=h.text + said, current=h.current and not changed)
                   if said else h)
    return out


def _chain(memory: Memory, by_id: dict[str, MemoryHit]) -> list[MemoryHit]:
    """The hits whose memories superseded `memory`, nearest first."""
    out: list[MemoryHit] = []
    at = memory
    while at.superseded_by in by_id and len(out) < 5:
        hit = by_id[at.superseded_by]
        if hit in out or hit.memory.id == memory.id:
            break
        out.append(hit)
        at = hit.memory
    return out
