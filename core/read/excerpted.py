"""Hits cut to excerpts (`rmm_core.read.excerpt`) as far as a word budget reads them:
growing prefixes of the list, each hit cut once (the cut of a hit does not depend on the
others)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ..types import MemoryHit
from .excerpt import EXCERPT_WORDS, WHOLE, excerpts
from .ranked import within


def excerpted(hits: list[MemoryHit], speakers: set[str], query: str, query_vec: np.ndarray,
              rows: Mapping[str, np.ndarray], stemmer: Callable | None, max_words: int | None,
              memo: dict[tuple[str, int], MemoryHit] | None = None) -> list[MemoryHit]:
    """Later hits cut to what bears on the query, the names it says read among the window's
    `speakers`; with a budget, only as many hits as it can hold are cut (the rest follow
    whole). `memo` keeps each cut by (memory id, place) for a later call on a longer list."""
    memo = {} if memo is None else memo

    def cut(start: int, end: int) -> list[MemoryHit]:
        end = min(end, len(hits))
        first = next((i for i in range(start, end) if (hits[i].memory.id, i) not in memo),
                     end)
        if first < end:
            memo.update(((h.memory.id, i), c) for i, (h, c) in enumerate(zip(
                hits[first:end], excerpts(hits[first:end], query, query_vec, rows,
                                          stemmer, speakers=speakers,
                                          whole=max(WHOLE - first, 0))), first))
        return [memo[h.memory.id, i] for i, h in enumerate(hits[start:end], start)]

    if max_words is None:
        return cut(0, len(hits))
    upto = -(-max_words // EXCERPT_WORDS) + WHOLE
    done = cut(0, upto)
    while upto < len(hits) and len(within(done, max_words)) == len(done):
        done += cut(upto, 2 * upto)
        upto *= 2
    return [*done, *hits[upto:]]
