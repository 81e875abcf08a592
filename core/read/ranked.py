"""One ranked list: what every search returns, whatever its `k`, `min_score` or word budget.

A search ranks one window of candidates whose size does not depend on the call
(`search.candidates`): the reranker orders it and the read steps arrange it; deeper
candidates follow in retrieval order. Each hit's score is its relevance capped by the
scores above it, so scores never rise down the list. `min_score`, `k` and `max_words` then
cut that list, each keeping a prefix: `search(k=a)` is the head of `search(k=b)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from ..text import count_words
from ..types import MemoryHit

CONTEXT_WORDS = 1000
"""Words of memories the framework adapters put into a prompt by default: about 1,300
tokens, small beside any current model's window, and the budget the headline figures
(Rtok@1000) are measured at. A budget rather than a count, because hits range from one
line to a whole passage: five long ones can cost ten times five short ones."""

WORDS_PER_HIT = 25
"""Words a hit is expected to hold at least, mostly: a budgeted search draws
`max_words / WORDS_PER_HIT` candidates first, and four times more while shorter hits leave
the budget unfilled."""


def capped(relevance: Iterable[float]) -> list[float]:
    """Each score at most every score before it (the list's own order is the ranking)."""
    out: list[float] = []
    for value in relevance:
        out.append(min(value, out[-1]) if out else value)
    return out


def within(hits: Iterable[MemoryHit], max_words: int | None) -> Iterator[MemoryHit]:
    """The hits in order while their texts' words fit in `max_words`, strictly: the first
    hit that does not fit ends the list, the first one too."""
    used = 0
    for hit in hits:
        used += count_words(hit.text)
        if max_words is not None and used > max_words:
            return
        yield hit


def numbered(hits: Sequence[MemoryHit]) -> list[MemoryHit]:
    """The hits with `rank` their place in the list, from 1."""
    return [h if h.rank == n else replace(h, rank=n) for n, h in enumerate(hits, 1)]


def depth_for(window: int, k: int | None, max_words: int | None) -> int:
    """How many candidates a search draws: the window, or more for a larger `k` or budget."""
    wanted = k if k is not None else -(-max_words // WORDS_PER_HIT) if max_words else 0
    return max(window, wanted)
