"""One ranked list: what every search returns, whatever its `k`, `min_score` or word budget.

A search ranks one window of candidates whose size does not depend on the call
(`search.candidates`): the reranker orders it and the read steps arrange it; deeper
candidates follow in retrieval order. Each hit's score is its match lowered by its place
(`rmm_core.read.score`), so scores never rise down the list. `min_score`, `k` and
`max_words` then cut that list, each keeping a prefix: `search(k=a)` is the head of
`search(k=b)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..text import count_words
from ..types import MemoryHit

CONTEXT_WORDS = 1000
"""Words of memories the framework adapters put into a prompt by default: about 1,300
tokens, small beside any current model's window, and the budget the headline figures
(Rtok@1000) are measured at. A budget rather than a count, because hits range from one
line to a whole passage: five long ones can cost ten times five short ones."""

def fitting(sizes: Iterable[int], budget: int | None) -> tuple[int, int]:
    """(items, words) of the leading items whose sizes in words fit in `budget`, strictly:
    the first that does not fit ends them, the first one too (`budget` None: all). The rule
    of every word budget, the search's and the benchmarks'."""
    taken = used = 0
    for size in sizes:
        if budget is not None and used + size > budget:
            break
        taken, used = taken + 1, used + size
    return taken, used


def within(hits: Sequence[MemoryHit], max_words: int | None) -> list[MemoryHit]:
    """The hits in order while their texts' words fit in `max_words` (`fitting`)."""
    return list(hits[:fitting((count_words(h.text) for h in hits), max_words)[0]])


def depth_for(window: int, k: int | None) -> int:
    """How many candidates a search draws first: the window, or more for a larger `k`. A
    word budget the hits leave unfilled draws twice as deep, and again (`Pool.draw`)."""
    return max(window, k or 0)
