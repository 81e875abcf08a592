"""What a hit's score means: how well it matches the query, lowered by its place in the list.

The ranking itself fuses BM25, dense similarity and the learned reranker, standardised over
each query's candidates, then the read steps move hits; its numbers say nothing outside that
one ranking. A hit's score is absolute instead, the product of two parts (`Score`):

- its match: its relevance, the larger of the best cosine similarity between the query's
  vector and the memory's vectors (its own and its turns', below zero read as zero) and the
  share of the query's words the memory says, at half weight (`coverage`: what an embedder
  that knows nothing of meaning still leaves), capped by the relevance of the hits above it;
- its place: the n-th hit keeps `place_discount(n)` = 1 - PLACE * (1 - 1/n) of its match
  (1, 0.85, 0.8, 0.775, 0.76 for the first five, never below 0.7). The list's order is the
  ranker's verdict, the best sign of which hit holds what the question needs; the place
  keeps the hits apart where their relevance ties or disagrees with the order, and a read
  step that moves a hit changes its place, so its score.

So scores never rise down the list and a threshold (`search(min_score=...)`) cuts its tail;
`rmm bench scores` measures what a threshold keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..language.tokens import tokenize
from ..models.cosines import IDENTITY, CosineScale
from ..types import MemoryHit
from .index import QUESTION_WORDS

PLACE = 0.3
"""What a hit's place can take from its match: the n-th hit keeps 1 - PLACE * (1 - 1/n) of it.
Chosen on LoCoMo development conversations 2-4 (`rmm bench scores`): averaged over `k=5` and
`max_words=1000`, the AUC of gold hits against the other hits of their questions and against
the hits of questions asked of another conversation is 0.902 (0.881 with no place); a
steeper discount tells one question's hits apart a little better, and the hits of questions
asked of the wrong memory from the gold ones worse."""

LEXICAL = 0.5
"""What saying every word of the query is worth on its own: a memory that does so but means
something else scores no more than a middling match of meaning."""


@dataclass(frozen=True, slots=True)
class Score:
    """A hit's score in parts: `value` = `match` x `place_discount(place)`."""

    value: float
    relevance: float
    """The hit's own relevance (`relevance_by_id`)."""
    match: float
    """Its relevance capped by the relevance of each hit above it."""
    capped_by: int | None
    """The place of the hit above whose relevance capped it (None: not capped)."""
    place: int
    """Its place in the list, from 1."""

    @property
    def discount(self) -> float:
        """What its place leaves of its match."""
        return place_discount(self.place)


def place_discount(place: int) -> float:
    """What the `place`-th hit keeps of its match: 1 for the first, less for each later one,
    never below 1 - PLACE."""
    return 1.0 - PLACE * (1.0 - 1.0 / place)


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


def coverage(asked: Sequence[str], said: Sequence[str]) -> float:
    """The share of the query's distinct terms (`asked`) among a text's terms (`said`),
    times LEXICAL."""
    wanted = set(asked)
    return LEXICAL * len(wanted.intersection(said)) / len(wanted) if wanted else 0.0


def scored(hits: Sequence[MemoryHit], relevance_of: Mapping[str, float],
           min_score: float | None = None) -> list[Score]:
    """The hits' scores in order, with their parts (`relevance_of`: each hit's relevance, by
    memory id), up to where one falls below `min_score`. Each depends on its hit and the
    hits above it alone, so a longer list starts with a shorter one's scores."""
    out: list[Score] = []
    match, capper = 1.0, None
    for place, hit in enumerate(hits, 1):
        relevance = relevance_of[hit.memory.id]
        capped_by = capper if relevance > match else None
        if relevance <= match:
            match, capper = relevance, place
        value = match * place_discount(place)
        if min_score is not None and value < min_score:
            break
        out.append(Score(value, relevance, match, capped_by, place))
    return out


def relevance_by_id(hits: Sequence[MemoryHit], query: str, close: Mapping[str, float],
                    stemmer: Callable | None) -> dict[str, float]:
    """Each hit's relevance, by id, from its candidate's best cosine to the query (`close`;
    a linked hit, A-MEM, is no candidate: its relevance is its cosine) and the query's words
    it says. It depends on the hit alone, so the hits shown are scored first and the other
    candidates only when read (which then needs no vector: a kept result holds none of the
    index's)."""
    terms = tokenize([query, *(h.memory.text for h in hits)], stemmer, QUESTION_WORDS)
    asked = terms[0]
    return {h.memory.id: max(close[h.memory.id] if h.memory.id in close
                             else float(np.clip(h.score, 0, 1)), coverage(asked, said))
            for h, said in zip(hits, terms[1:])}
