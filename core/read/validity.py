"""What is still true: hits ordered so that a superseded memory comes right after what
replaced it, each saying in words whether it changed, and the view as of a past date."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime, timezone

from ..types import Memory, MemoryHit
from .context import format_date

ABOUT_THE_PAST = re.compile(
    r"\b(?:before|used to|previous(?:ly)?|former(?:ly)?|original(?:ly)?|at first|"
    r"initial(?:ly)?|in the past|back then|back when|earlier|prior|old|first time|"
    r"at the (?:start|beginning))\b", re.IGNORECASE)
"""A question about how things were ("where did I live before Berlin?"): its hits keep
their rank, the superseded memory is the answer."""

NOTE_WORDS = 16
"""Most words quoted from a successor in a superseded hit's note."""


def about_the_past(query: str) -> bool:
    return bool(ABOUT_THE_PAST.search(query))


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def valid_at(memory: Memory, moment: datetime) -> bool:
    """Whether the memory was said by `moment` and not yet superseded then."""
    moment = _utc(moment)
    return _utc(memory.valid_from) <= moment and (
        memory.valid_to is None or _utc(memory.valid_to) > moment)


def note(memory: Memory) -> str:
    """The words a hit adds about its memory's validity ('' for a current memory)."""
    if memory.valid_to is None:
        return ""
    words = (memory.changed_to or "").split()
    said = " ".join(words[:NOTE_WORDS]) + (" …" if len(words) > NOTE_WORDS else "")
    what = "partly changed" if memory.changed_part else "changed"
    arrow = f" → {said}" if said else ""
    return f" ({what} {format_date(memory.valid_to)}{arrow})"


def conflict_note(memory: Memory, dates: dict[str, datetime]) -> str:
    """The words a hit adds when another memory contradicts it ('' when none does)."""
    when = sorted(format_date(dates[c]) for c in memory.conflicts if c in dates)
    if not memory.conflicts:
        return ""
    return " (contradicted by what was said " + (f"on {', '.join(when)}" if when else
                                                 "elsewhere") + ": ask which holds)"


def arrange(hits: Sequence[MemoryHit], fetch: Callable[[list[str]], list[Memory]],
            text_of: Callable[[Memory], str], *, k: int, current_first: bool
            ) -> list[MemoryHit]:
    """The hits with, when `current_first`, each superseded memory's successor (the current
    end of its chain, fetched if no hit holds it) right before it, and each contradicted
    memory's counterpart right after it; at most `k`, every text noting its validity."""
    by_id = {h.memory.id: h.memory for h in hits}
    wanted = [i for h in hits for i in (
        [h.memory.superseded_by] if current_first and h.memory.superseded_by else []) +
        h.memory.conflicts if i not in by_id]
    for _ in range(4):  # successors of successors, a short chain at most
        if not wanted:
            break
        found = fetch(list(dict.fromkeys(wanted)))
        by_id.update((m.id, m) for m in found)
        wanted = [m.superseded_by for m in found
                  if current_first and m.superseded_by and m.superseded_by not in by_id]
    score_of = {h.memory.id: h.score for h in hits}
    order: list[tuple[Memory, float]] = []
    placed: set[str] = set()

    def put(memory: Memory, score: float) -> None:
        if memory.id not in placed:
            placed.add(memory.id)
            order.append((memory, score_of.get(memory.id, score)))

    for hit in hits:
        if current_first:
            for successor in reversed(_chain(hit.memory, by_id)):
                put(successor, hit.score)
        put(hit.memory, hit.score)
        for other in hit.memory.conflicts:
            if other in by_id:
                put(by_id[other], hit.score)
    dates = {m.id: m.valid_from for m in by_id.values()}
    text = {h.memory.id: h.text for h in hits}
    return [MemoryHit(m, score, (text.get(m.id) or text_of(m)) + note(m) +
                      conflict_note(m, dates), rank)
            for rank, (m, score) in enumerate(order[:k])]


def _chain(memory: Memory, by_id: dict[str, Memory]) -> list[Memory]:
    """The memories that superseded `memory`, nearest first."""
    out: list[Memory] = []
    at = memory
    while at.superseded_by in by_id and len(out) < 5:
        at = by_id[at.superseded_by]
        if at in out or at.id == memory.id:
            break
        out.append(at)
    return out
