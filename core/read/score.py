"""What a hit's score means: the query's closeness to the memory, in [0, 1].

The ranking itself fuses BM25, dense similarity and the learned reranker, standardised over
each query's candidates, so its numbers say nothing outside that one ranking. A hit's
relevance is absolute instead: the larger of the best cosine similarity between the query's
vector and the memory's vectors (its own and its turns', below zero read as zero) and the
share of the query's words the memory says, at half weight (`coverage`: what an embedder
that knows nothing of meaning still leaves). The score a hit carries is that relevance capped by the
scores of the hits above it (`rmm_core.read.ranked`), so scores follow the order and a
threshold (`search(min_score=...)`) cuts the tail of the list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..language.tokens import tokenize
from ..models.cosines import IDENTITY, CosineScale
from ..types import MemoryHit
from .index import QUESTION_WORDS
from .ranked import capped


def relevances(query_vec: np.ndarray, blocks: Sequence[np.ndarray],
               scale: CosineScale = IDENTITY) -> np.ndarray:
    """Each memory's best cosine between the (unit) query vector and its (unit) vector rows
    (`blocks`), on the MiniLM's scale (`scale`: the embedder's `cosine_scale`), in [0, 1];
    from one product."""
    sizes = np.fromiter(map(len, blocks), dtype=np.int64, count=len(blocks))
    out = np.zeros(len(blocks), dtype=np.float64)
    if not sizes.sum():
        return out
    has = sizes > 0
    # einsum sums each row on its own; BLAS sums a row differently in a taller matrix, and
    # a score must not depend on how many candidates were drawn with it
    sims = np.einsum("ij,j->i", np.concatenate([b for b in blocks if len(b)]), query_vec)
    starts = np.cumsum(sizes[has]) - sizes[has]
    out[has] = np.clip(scale.of_query(np.maximum.reduceat(sims, starts)), 0.0, 1.0)
    return out


LEXICAL = 0.5
"""What saying every word of the query is worth on its own: a memory that does so but means
something else scores no more than a middling match of meaning."""


def coverage(asked: Sequence[str], said: Sequence[str]) -> float:
    """The share of the query's distinct terms (`asked`) among a text's terms (`said`),
    times LEXICAL."""
    wanted = set(asked)
    return LEXICAL * len(wanted.intersection(said)) / len(wanted) if wanted else 0.0


def scores(hits: Sequence[MemoryHit], relevance_of: Mapping[str, float],
           min_score: float | None = None) -> list[float]:
    """The hits' scores in order, each its relevance capped by the scores above it
    (`relevance_of`: each hit's relevance, by memory id), up to where one falls below
    `min_score` (non-increasing: what is kept is a prefix)."""
    out = capped(relevance_of[h.memory.id] for h in hits)
    return out if min_score is None else [s for s in out if s >= min_score]


def relevance_by_id(hits: Sequence[MemoryHit], query: str, close: Mapping[str, float],
                    stemmer: Callable | None) -> dict[str, float]:
    """Each hit's relevance, by id, from its candidate's best cosine to the query (`close`;
    a linked hit, A-MEM, is no candidate: its score is its cosine) and the query's words it
    says. It depends on the hit alone, so the hits shown are scored first and the other
    candidates only when read (which then needs no vector: a kept result holds none of the
    index's)."""
    terms = tokenize([query, *(h.memory.text for h in hits)], stemmer, QUESTION_WORDS)
    asked = terms[0]
    return {h.memory.id: max(close[h.memory.id] if h.memory.id in close
                             else float(np.clip(h.score, 0, 1)), coverage(asked, said))
            for h, said in zip(hits, terms[1:])}
