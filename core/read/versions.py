"""Versions of one fact among a search's hits, newest first: hits that answer the same
question about the same person, said at different times, are read as versions of one fact
("I'm a barista at Blue Bottle", months later "First week at the bank went great"). For a
question about the present the newest version comes first and each older one is marked
`current=False` with a note saying what replaced it, even when nothing linked them on write.

It is decided on the vectors the search already holds, without a word list, so it works in
any language the embedder reads:

- **same question**: each hit's best row (its own vector or a turn's) is near the query,
  above `FLOOR` and within `MARGIN` of the best hit's, and no more than `MOST` hits are: a
  question many hits answer (a conversation that keeps returning to a topic) is left as
  the ranker ordered it;
- **same fact**: the two hits' best-matching rows are close (`CLOSE`), and each is the
  other's nearest among the hits near the query: a hit about someone else ("my sister lives
  in Berlin") sits further from the question "where do I live?" than what one says of
  oneself, and is nearer to other talk of that person than to one's own fact;
- **same person**: they share a speaker;
- **different times**: said at least `GAP` apart.

A question about the past (`about_the_past`, or `as_of`) is not passed here: the old fact
keeps its rank and is not marked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import timedelta

import numpy as np

from ..language.dates import format_date
from ..types import Memory, MemoryHit, as_utc
from .validity import NOTE_WORDS

FLOOR = 0.3
"""Least cosine of a hit's best row to the query for it to be a version of the answer."""
MARGIN = 0.2
"""How far below the best hit's cosine to the query a version may be."""
CLOSE = 0.65
"""Least cosine of two hits' best-matching rows for them to be versions of one fact."""
MOST = 2
"""Most hits near the query for any of them to be read as versions."""
GAP = timedelta(days=1)
"""Least time between two versions."""


def newest_first(hits: Sequence[MemoryHit], query: str, query_vec: np.ndarray,
                 rows: Mapping[str, np.ndarray], *, now: bool = True, floor: float = FLOOR,
                 margin: float = MARGIN, close: float = CLOSE, gap: timedelta = GAP,
                 most: int = MOST) -> list[MemoryHit]:
    """The hits with each newest version of a fact right before its highest older version,
    the older ones marked `current=False` and noted (`now` False: the hits as they are).
    `rows` maps a memory id to its unit vector rows; hits without rows are left alone."""
    if not now or len(hits) < 2:
        return list(hits)
    near = _near(hits, query_vec, rows, floor, margin)
    if not 2 <= len(near) <= most:
        return list(hits)
    newer = _versions(hits, near, rows, close, gap)
    if not newer:
        return list(hits)
    order = list(range(len(hits)))
    for old, new in sorted(newer.items()):
        if order.index(new) > order.index(old):
            order.remove(new)
            order.insert(order.index(old), new)
    out = []
    for i in order:
        hit = hits[i]
        if i in newer:
            successor = hits[newer[i]].memory
            hit = replace(hit, current=False, text=hit.text + outdated_note(successor))
        out.append(hit)
    return out


def outdated_note(successor: Memory) -> str:
    """` (may have changed 10 June 2024 → <first words of what replaced it>)`."""
    words = successor.text.split()
    said = " ".join(words[:NOTE_WORDS]) + (" …" if len(words) > NOTE_WORDS else "")
    return f" (may have changed {format_date(successor.valid_from)} → {said})"


def _near(hits: Sequence[MemoryHit], query_vec: np.ndarray, rows: Mapping[str, np.ndarray],
          floor: float, margin: float) -> dict[int, np.ndarray]:
    """The hits that answer the question, by place: their rows."""
    best = {}
    for i, hit in enumerate(hits):
        vectors = rows.get(hit.memory.id)
        if vectors is None or not len(vectors) or not hit.memory.current or hit.current is False:
            continue
        best[i] = float(np.max(np.atleast_2d(vectors) @ query_vec))
    if not best:
        return {}
    top = max(best.values())
    return {i: np.atleast_2d(rows[hits[i].memory.id]) for i, s in best.items()
            if s >= floor and s >= top - margin}


def _versions(hits: Sequence[MemoryHit], near: Mapping[int, np.ndarray],
              rows: Mapping[str, np.ndarray], close: float,
              gap: timedelta) -> dict[int, int]:
    """Each older version's place -> its newest version's place."""
    places = sorted(near)
    starts = np.cumsum([0, *(len(near[p]) for p in places[:-1])])
    stacked = np.vstack([near[p] for p in places])
    # every row pair's cosine at once, by einsum: no BLAS threads, which on a busy machine
    # cost more than the product itself (a 40-row gram: 10 ms by matmul, 0.6 ms by einsum)
    gram = np.einsum("ij,kj->ik", stacked, stacked)
    best = np.maximum.reduceat(np.maximum.reduceat(gram, starts, axis=0), starts, axis=1)
    np.fill_diagonal(best, -np.inf)
    sim = {(a, b): float(best[i, j]) for i, a in enumerate(places)
           for j, b in enumerate(places) if a != b}
    nearest = {a: places[int(np.argmax(best[i]))] for i, a in enumerate(places)}
    parent = {i: i for i in places}

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for a in places:
        b = nearest[a]
        if a > b or nearest[b] != a or sim[a, b] < close:
            continue
        ma, mb = hits[a].memory, hits[b].memory
        if ma.speakers and mb.speakers and not set(ma.speakers) & set(mb.speakers):
            continue
        if abs(as_utc(ma.valid_from) - as_utc(mb.valid_from)) < gap:
            continue
        parent[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for i in places:
        groups.setdefault(root(i), []).append(i)
    out = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        newest = max(members, key=lambda i: as_utc(hits[i].memory.valid_from))
        for i in members:
            if i != newest:
                out[i] = newest
    return out
