"""What a hit's score means: the query's closeness to the memory, in [0, 1].

The ranking itself fuses BM25, dense similarity and the learned reranker, standardised over
each query's candidates, so its numbers say nothing outside that one ranking. The score a
hit carries is absolute instead: the best cosine similarity between the query's vector and
the memory's vectors (its own and its turns'), below zero read as zero. It is comparable
across queries and users of one embedding model, so a threshold (`search(min_score=...)`)
means the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..types import MemoryHit


def relevance(query_vec: np.ndarray, rows: np.ndarray) -> float:
    """Best cosine between the (unit) query vector and a memory's (unit) vector rows, in [0, 1]."""
    if not len(rows):
        return 0.0
    return float(np.clip(np.max(rows @ query_vec), 0.0, 1.0))


def scored(hits: Sequence[MemoryHit], relevance_of: dict[str, float],
           min_score: float | None = None) -> list[MemoryHit]:
    """The hits in the same order with their relevance as score; those below `min_score`
    dropped."""
    # a linked hit (A-MEM) is no candidate: its score is already its cosine
    scores = [relevance_of.get(h.memory.id, float(np.clip(h.score, 0.0, 1.0))) for h in hits]
    kept = [(h, s) for h, s in zip(hits, scores) if min_score is None or s >= min_score]
    return [MemoryHit(h.memory, s, h.text, rank) for rank, (h, s) in enumerate(kept)]
