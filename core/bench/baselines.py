"""Fixed-unit baselines of BASELINES.md, computed in the same run as the product: windows of
turns, whole sessions, and word-limited passages cut within each turn as a plain vector store
cuts its documents."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import InvalidInputError
from ..models.embed import Embedder
from ..read.index import tokenize
from .records import Conversation

Cut = list[tuple[str, list[str]]]
"""A conversation cut into units: (text, ids of its source turns) in conversation order."""


def windows(conv: Conversation, turns: int) -> Cut:
    """Consecutive windows of `turns` turns within each session (0 = the whole session)."""
    units = []
    for session in conv.sessions:
        step = turns or len(session.turns)
        for start in range(0, len(session.turns), step):
            chunk = session.turns[start:start + step]
            units.append(("\n".join(t.render() for t in chunk), [t.id for t in chunk]))
    return units


def word_passages(conv: Conversation, max_words: int) -> Cut:
    """Each turn cut into consecutive passages of at most `max_words` words, the speaker's
    name heading each one, with no regard to sentences (a fixed-size text splitter)."""
    units = []
    for turn in (t for s in conv.sessions for t in s.turns):
        head = f"{turn.speaker}:"
        room = max(1, max_words - len(head.split()))
        text = turn.text.split()
        units += [(" ".join([head, *text[i:i + room]]), [turn.id])
                  for i in range(0, max(len(text), 1), room)]
    return units


UNITS: dict[str, Callable[[Conversation], Cut]] = {
    "turn": partial(windows, turns=1),
    "w3": partial(windows, turns=3),
    "w6": partial(windows, turns=6),
    "session": partial(windows, turns=0),
    "p60": partial(word_passages, max_words=60),
    "p100": partial(word_passages, max_words=100),
}
"""Unit name -> how a conversation is cut into such units."""

RRF_K = 60


@dataclass(slots=True)
class FixedUnits:
    """One conversation cut into fixed units, with BM25 and dense rankers over them."""

    texts: list[str]
    refs: list[list[str]]
    bm25: object
    vectors: np.ndarray

    def rank(self, retriever: str, query: str, query_vec: np.ndarray,
             depth: int | None = None) -> list[int]:
        return RETRIEVERS[retriever](self, query, query_vec)[:depth]


def build_units(conv: Conversation, unit: str, embedder: Embedder) -> FixedUnits:
    """`conv` cut into `unit`s (a key of UNITS), indexed for BM25 and embedded."""
    import bm25s

    if unit not in UNITS:
        raise InvalidInputError(f"unknown baseline unit {unit!r}; choose among {sorted(UNITS)}")
    cut = UNITS[unit](conv)
    texts, refs = [text for text, _ in cut], [ids for _, ids in cut]
    bm25 = bm25s.BM25()
    bm25.index(tokenize(texts), show_progress=False)
    return FixedUnits(texts, refs, bm25, embedder.embed(texts))


def _bm25(units: FixedUnits, query: str, query_vec: np.ndarray) -> list[int]:
    tokens = tokenize([query])[0]
    scores = units.bm25.get_scores(tokens) if tokens else np.zeros(len(units.texts))
    return list(np.argsort(-np.asarray(scores), kind="stable"))


def _dense(units: FixedUnits, query: str, query_vec: np.ndarray) -> list[int]:
    return list(np.argsort(-(units.vectors @ query_vec), kind="stable"))


def _fused(units: FixedUnits, query: str, query_vec: np.ndarray) -> list[int]:
    score = np.zeros(len(units.texts))
    for ranking in (_bm25(units, query, query_vec), _dense(units, query, query_vec)):
        score[np.asarray(ranking)] += 1.0 / (RRF_K + 1 + np.arange(len(ranking)))
    return list(np.argsort(-score, kind="stable"))


RETRIEVERS: dict[str, Callable[[FixedUnits, str, np.ndarray], list[int]]] = {
    "bm25": _bm25,
    "dense": _dense,
    "fused": _fused,
}
