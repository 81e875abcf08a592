"""A user's search index: faiss over memory vectors, bm25s over keys, fused into one ranking."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .storage.base import IndexData


def tokenize(texts: list[str], stemmer: Callable | None = None) -> list[list[str]]:
    """BM25 tokens: lower-cased words of 2+ characters, English stop words removed."""
    import bm25s

    return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, return_ids=False,
                          show_progress=False)


def english_stemmer() -> Callable | None:
    """PyStemmer's English stemmer when installed (extra `stem`), else no stemming."""
    try:
        import Stemmer
    except ImportError:
        return None
    return Stemmer.Stemmer("english").stemWords


@dataclass(slots=True)
class Candidates:
    """Scored candidates: positions into the index's ids, best first, with their parts."""

    positions: np.ndarray
    fused: np.ndarray
    dense: np.ndarray
    lexical: np.ndarray


class UserIndex:
    """Immutable snapshot of one user's memories, rebuilt when the store's generation moves."""

    def __init__(self, data: IndexData, stemmer: Callable | None = None) -> None:
        import bm25s
        import faiss

        self.generation = data.generation
        self.ids = data.ids
        self.owner = data.owner
        self.vectors = data.vectors
        self.stemmer = stemmer
        self._faiss = None
        if len(data.vectors):
            self._faiss = faiss.IndexFlatIP(data.vectors.shape[1])
            self._faiss.add(np.ascontiguousarray(data.vectors, dtype=np.float32))
        self._bm25 = None
        if self.ids:
            self._bm25 = bm25s.BM25()
            self._bm25.index(tokenize(data.keys, stemmer), show_progress=False)

    def __len__(self) -> int:
        return len(self.ids)

    def dense_scores(self, query: np.ndarray, depth: int) -> dict[int, float]:
        """Best cosine per memory among the top `depth` vectors (max over a memory's vectors)."""
        if self._faiss is None:
            return {}
        depth = min(depth, self._faiss.ntotal)
        sims, rows = self._faiss.search(query.reshape(1, -1).astype(np.float32), depth)
        best: dict[int, float] = {}
        for sim, row in zip(sims[0], rows[0]):
            if row < 0:
                continue
            pos = int(self.owner[row])
            if pos not in best:
                best[pos] = float(sim)
        return best

    def exact_dense(self, query: np.ndarray, positions: list[int]) -> np.ndarray:
        """Max cosine over each listed memory's vectors (for candidates faiss did not return)."""
        out = np.zeros(len(positions), dtype=np.float32)
        if not positions or not len(self.vectors):
            return out
        wanted = np.isin(self.owner, positions)
        rows = np.flatnonzero(wanted)
        sims = self.vectors[rows] @ query
        slot = {p: i for i, p in enumerate(positions)}
        for row, sim in zip(rows, sims):
            i = slot[int(self.owner[row])]
            out[i] = max(out[i], sim) if out[i] else sim
        return out

    def lexical_scores(self, query: str) -> np.ndarray:
        """BM25 score of every memory for the query (zeros when no query term is known)."""
        if self._bm25 is None:
            return np.zeros(0, dtype=np.float32)
        tokens = tokenize([query], self.stemmer)[0]
        if not tokens:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(tokens), dtype=np.float32)


def fuse_scores(dense: np.ndarray, lexical: np.ndarray, *, dense_weight: float) -> np.ndarray:
    """Convex mix of cosine and max-normalised BM25 (both on a 0..1 scale)."""
    top = float(lexical.max()) if len(lexical) else 0.0
    lex = lexical / top if top > 0 else lexical
    return dense_weight * dense + (1.0 - dense_weight) * lex


def search_index(index: UserIndex, query_text: str, query_vec: np.ndarray, *,
                 top: int, dense_weight: float, depth: int = 200) -> Candidates:
    """Fused top-`top` candidates: BM25 over every key, dense over faiss's top `depth`."""
    if not len(index):
        empty = np.zeros(0)
        return Candidates(empty.astype(np.int64), empty, empty, empty)
    lexical = index.lexical_scores(query_text)
    dense_map = index.dense_scores(query_vec, max(depth, top * 4))
    lex_top = np.argsort(-lexical)[: max(depth, top * 4)]
    pool = list(dict.fromkeys([*dense_map, *[int(p) for p in lex_top if lexical[p] > 0]]))
    missing = [p for p in pool if p not in dense_map]
    for p, sim in zip(missing, index.exact_dense(query_vec, missing)):
        dense_map[p] = float(sim)
    positions = np.asarray(pool, dtype=np.int64)
    dense = np.asarray([dense_map[p] for p in pool], dtype=np.float32)
    lex = lexical[positions]
    # normalise BM25 by the best score over the whole bank, not just the pool
    top_lex = float(lexical.max()) if len(lexical) else 0.0
    lex_norm = lex / top_lex if top_lex > 0 else lex
    fused = dense_weight * dense + (1.0 - dense_weight) * lex_norm
    order = np.argsort(-fused, kind="stable")[:top]
    return Candidates(positions[order], fused[order], dense[order], lex[order])
