"""Fixed-unit baselines of BASELINES.md, computed in the same run as the product."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..models.embed import Embedder
from ..read.index import tokenize
from .records import Conversation

UNITS = {"turn": 1, "w3": 3, "w6": 6, "session": 0}
"""Unit name -> turns per unit (0 = the whole session)."""

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
    import bm25s

    size = UNITS[unit]
    texts, refs = [], []
    for session in conv.sessions:
        step = size or len(session.turns)
        for start in range(0, len(session.turns), step):
            chunk = session.turns[start:start + step]
            texts.append("\n".join(t.render() for t in chunk))
            refs.append([t.id for t in chunk])
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
