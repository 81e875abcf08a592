"""A user's search index: bm25s over keys, unit and turn vectors, fused into one ranking.

Fusion (measured on the LoCoMo dev conversations, see README): each signal is z-normalised
over the user's memories, then summed with weights — BM25 over the stemmed key, cosine to
the memory's own vector (row 0), and the best cosine among its turns' vectors (rows 1..).
A memory's score then borrows a little from its neighbours in the same session, since a
topic often spills over a segment boundary.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .storage.base import IndexData
from .tokens import tokenize

QUESTION_WORDS = frozenset(
    "what when where who whom whose which why how did does do has have had is are was were "
    "would could likely kind kinds type types much many".split())
"""Words of a question that say what is asked, not what it is about; dropped for BM25."""

POOL = 300
"""Memories scored in full (turn vectors, neighbours) when a bank is larger than this."""

Z_SAMPLE = 2000
"""Memories sampled to estimate the turn signal's mean and spread on large banks."""

DEPTH = 300
"""How deep the dense IVF search reaches when shortlisting a large bank."""

LEXICAL_DEPTH = 2000
"""How many of BM25's best join that shortlist (BM25 is exact, so this is cheap)."""

EXACT_LIMIT = 20_000
"""Banks up to this size are scored exhaustively; larger ones through an IVF shortlist."""


def english_stemmer() -> Callable | None:
    """PyStemmer's English stemmer when installed (extra `stem`), else no stemming."""
    try:
        import Stemmer
    except ImportError:
        return None
    return Stemmer.Stemmer("english").stemWords


def quiet_bm25s() -> None:
    """Undo bm25s's `setLevel(DEBUG)` on its own logger at import, so that it follows the
    application's logging configuration like every other library's."""
    logger = logging.getLogger("bm25s")
    if logger.level == logging.DEBUG:
        logger.setLevel(logging.NOTSET)


def bm25_index(corpus: list[list[str]]) -> Any:
    """A bm25s index of tokenised texts, or None when no text has a term (bm25s needs one)."""
    if not any(corpus):
        return None
    import bm25s

    quiet_bm25s()
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    return index


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """How the signals combine; the defaults are the measured best (README, benchmarks)."""

    lexical: float = 1.0
    dense: float = 1.0
    turn: float = 0.5
    smoothing: float = 0.25
    assistant: float = 1.0
    """Subtracted from memories that only `assistant_speakers` wrote."""
    assistant_speakers: frozenset[str] = frozenset({"assistant"})
    """Speaker names (case-folded) of the assistant side of a chat."""

    def by_assistant(self, speakers: list[str]) -> bool:
        """Whether text of these speakers is the assistant's alone (gets the `assistant`
        penalty)."""
        return bool(speakers) and all(s.casefold() in self.assistant_speakers for s in speakers)


@dataclass(slots=True)
class _TurnRows:
    """The turn vectors of some memories, stacked; `offsets` into them for those that have any."""

    matrix: np.ndarray
    offsets: np.ndarray
    has: np.ndarray

    def best(self, query: np.ndarray, fallback: np.ndarray) -> np.ndarray:
        out = np.asarray(fallback, dtype=np.float32).copy()
        if len(self.matrix):
            out[self.has] = np.maximum.reduceat(self.matrix @ query, self.offsets)
        return out


@dataclass(frozen=True, slots=True)
class Corpus:
    """What BM25 knows of a corpus: documents, their mean length in tokens, and how many
    documents hold each token (bm25s keeps no such figures for texts it did not index)."""

    n: int
    mean_length: float
    freqs: Counter

    @classmethod
    def of(cls, docs: list[list[str]] | list[Counter]) -> Corpus:
        freqs = Counter(token for doc in docs for token in set(doc))
        lengths = [d.total() if isinstance(d, Counter) else len(d) for d in docs]
        return cls(len(docs), sum(lengths) / max(len(docs), 1), freqs)

    def scores(self, query: list[str], docs: list[Counter], k1: float = 1.5,
               b: float = 0.75) -> np.ndarray:
        """BM25 (the Lucene variant, bm25s's default and parameters) of texts outside the
        corpus (each as its token counts), as if they were in it: the corpus's document
        frequencies and mean length."""
        out = np.zeros(len(docs), dtype=np.float32)
        length = max(self.mean_length, 1.0)
        idf = {t: math.log(1 + (self.n - self.freqs[t] + 0.5) / (self.freqs[t] + 0.5))
               for t in set(query)}
        for i, counts in enumerate(docs):
            norm = k1 * (1 - b + b * counts.total() / length)
            out[i] = sum(w * counts[t] / (counts[t] + norm) for t, w in idf.items()
                         if t in counts)
        return out


@dataclass(frozen=True, slots=True)
class Scale:
    """Mean and spread of each signal over the bank, as one search z-scored them: items
    scored outside the index (provisional turns) are put on the same scale with it."""

    lexical: tuple[float, float] | None
    """None: the items' own (their lexical score is not on the bank's scale)."""
    unit: tuple[float, float]
    turn: tuple[float, float]
    fused: float | None = None
    """Spread of the fused scores (None: that of the items fused)."""

    @classmethod
    def of(cls, lexical: np.ndarray, dense: np.ndarray) -> Scale:
        """The scale of items with no bank to compare with: their own."""
        return cls(_stats(lexical), _stats(dense), _stats(dense))

    def fuse(self, weights: FusionWeights, lexical: np.ndarray, dense: np.ndarray,
             assistant: np.ndarray) -> np.ndarray:
        """The fused score of items with one vector each (it is their unit and turn vector),
        lowered like the bank's for items only the assistant wrote; no neighbour smoothing."""
        fused = (weights.lexical * _scaled(lexical, self.lexical or _stats(lexical))
                 + weights.dense * _scaled(dense, self.unit)
                 + weights.turn * _scaled(dense, self.turn))
        spread = self.fused if self.fused is not None else _stats(fused)[1]
        return fused - weights.assistant * spread * assistant


@dataclass(slots=True)
class Candidates:
    """Scored candidates: positions into the index's ids, best first, and their scores."""

    positions: np.ndarray
    fused: np.ndarray
    scale: Scale | None = None


class UserIndex:
    """Immutable snapshot of one user's memories, rebuilt when the store's generation moves."""

    def __init__(self, data: IndexData, stemmer: Callable | None = None) -> None:
        self.generation = data.generation
        self.ids = data.ids
        self.owner = data.owner
        self.vectors = data.vectors
        self.stemmer = stemmer
        n = len(data.ids)
        order = np.argsort(data.owner, kind="stable")
        self._rows = order  # vector rows grouped by memory position, row 0 of each first
        self._start = np.searchsorted(data.owner[order], np.arange(n + 1))
        has = self._start[1:] > self._start[:-1]
        dim = data.vectors.shape[1] if len(data.vectors) else 0
        self.units = np.zeros((n, dim), dtype=np.float32)
        self.units[has] = data.vectors[order[self._start[:-1][has]]]
        self._prev, self._next = _neighbours(data.sessions, n)
        self._speakers = data.speakers
        self._assistant: tuple[frozenset[str], np.ndarray] | None = None
        self._keys = data.keys
        self.metadata = data.metadata or [{} for _ in data.ids]
        self.corpus = Corpus(0, 0.0, Counter())
        """Document frequencies of the keys' BM25 tokens (filled with the BM25 index)."""
        self._faiss = None  # built on first use: reflection needs only vectors, search
        self._bm25 = None   # only BM25 and the unit matrix
        self._ann = None
        self._sample = None

    def __len__(self) -> int:
        return len(self.ids)

    # signals -----------------------------------------------------------------------------
    def lexical_scores(self, query: str) -> np.ndarray:
        """BM25 score of every memory for the query's content words."""
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        if self._bm25 is None:  # threads may race here: each publishes a finished index
            docs = tokenize(self._keys, self.stemmer)
            self.corpus = Corpus.of(docs)
            index = bm25_index(docs)
            self._bm25 = False if index is None else index  # False: no key has a term
        tokens = tokenize([query], self.stemmer, QUESTION_WORDS)[0]
        if not tokens or self._bm25 is False:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(tokens), dtype=np.float32)

    def unit_scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine between the query and each memory's own vector."""
        return self.units @ query if len(self.units) and self.units.shape[1] else \
            np.zeros(len(self.ids), dtype=np.float32)

    def turn_scores(self, query: np.ndarray, positions: np.ndarray,
                    fallback: np.ndarray) -> np.ndarray:
        """Best cosine among each listed memory's turn vectors; `fallback` where it has none."""
        return self._turn_rows(positions).best(query, fallback)

    def rows_of(self, position: int) -> np.ndarray:
        """The vector rows of the memory at `position`: its own first, then its turns'."""
        return self.vectors[self._rows[self._start[position]:self._start[position + 1]]]

    def assistant_only(self, weights: FusionWeights) -> np.ndarray:
        """Per memory: 1.0 when `weights` count its speakers as the assistant alone, else 0.0
        (kept for the last speaker names asked)."""
        names = weights.assistant_speakers
        if self._assistant is None or self._assistant[0] != names:
            only = np.zeros(len(self.ids), dtype=np.float32)
            if len(self._speakers) == len(self.ids):
                only[:] = [weights.by_assistant(s) for s in self._speakers]
            self._assistant = (names, only)
        return self._assistant[1]

    def _turn_rows(self, positions: np.ndarray) -> _TurnRows:
        starts, ends = self._start[positions] + 1, self._start[positions + 1]
        counts = np.maximum(ends - starts, 0)
        has = counts > 0
        counts, starts = counts[has], starts[has]
        offsets = np.cumsum(counts) - counts
        within = np.arange(int(counts.sum())) - np.repeat(offsets, counts)
        rows = self._rows[np.repeat(starts, counts) + within]
        return _TurnRows(np.ascontiguousarray(self.vectors[rows]), offsets, has)

    def _sampled(self) -> tuple[np.ndarray, np.ndarray, _TurnRows]:
        """Z_SAMPLE memories spread over the bank, their unit vectors and turn rows."""
        if self._sample is None:
            positions = _spread(len(self.ids), Z_SAMPLE)
            self._sample = (positions, np.ascontiguousarray(self.units[positions]),
                            self._turn_rows(positions))
        return self._sample

    def dense_scores(self, query: np.ndarray, depth: int) -> dict[int, float]:
        """Best cosine per memory over all its vectors, for the top `depth` vector rows."""
        if not len(self.vectors):
            return {}
        if self._faiss is None:
            import faiss

            flat = faiss.IndexFlatIP(self.vectors.shape[1])
            flat.add(np.ascontiguousarray(self.vectors, dtype=np.float32))
            self._faiss = flat  # published only once filled: threads share this snapshot
        depth = min(depth, self._faiss.ntotal)
        sims, rows = self._faiss.search(query.reshape(1, -1).astype(np.float32), depth)
        best: dict[int, float] = {}
        for sim, row in zip(sims[0], rows[0]):
            if row >= 0:
                best.setdefault(int(self.owner[row]), float(sim))
        return best

    def _ivf(self) -> Any:
        """An IVF index (8-bit codes) over the unit vectors, built on first use.

        Only large banks use it, for a shortlist: the shortlist is then scored exactly.
        """
        if self._ann is None:  # threads may race here: each publishes a finished index
            import faiss

            n, dim = self.units.shape
            nlist = int(np.clip(4 * np.sqrt(n), 16, 8192))
            ivf = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dim), dim, nlist,
                                                faiss.ScalarQuantizer.QT_8bit,
                                                faiss.METRIC_INNER_PRODUCT)
            ivf.train(self.units[_spread(n, 40 * nlist)])
            ivf.add(self.units)
            ivf.nprobe = max(8, nlist // 20)
            self._ann = ivf
        return self._ann

    # ranking --------------------------------------------------------------------------------
    def search(self, query_text: str, query_vec: np.ndarray, *, top: int,
               weights: FusionWeights = FusionWeights(), exact: bool | None = None,
               subset: np.ndarray | None = None) -> Candidates:
        """The fused top-`top` memories for a query (only those at the sorted positions
        `subset`, when given: a metadata filter's).

        Banks of up to EXACT_LIMIT memories (or any bank with `exact=True`, or a subset of
        up to EXACT_LIMIT) are scored exhaustively. Larger ones score a shortlist: the IVF
        index's nearest DEPTH memories and BM25's best LEXICAL_DEPTH, with the dense signal's
        spread estimated from a sample. Signals are z-scored over the whole bank.
        """
        n = len(self.ids)
        if not n or (subset is not None and not len(subset)):
            return Candidates(np.zeros(0, dtype=np.int64), np.zeros(0))
        lexical = self.lexical_scores(query_text)
        sample, sample_units, sample_turns = self._sampled()
        sample_unit = sample_units @ query_vec
        exhaustive = ((n <= EXACT_LIMIT if exact is None else exact)
                      or n <= 2 * (DEPTH + LEXICAL_DEPTH)
                      or (subset is not None and len(subset) <= EXACT_LIMIT))
        if exhaustive:
            unit = self.unit_scores(query_vec)
            unit_stats = _stats(unit)
            shortlist = np.arange(n) if subset is None else subset
        else:
            unit_stats = _stats(sample_unit)
            near = self._ivf().search(query_vec.reshape(1, -1).astype(np.float32), DEPTH)[1][0]
            listed = np.zeros(n, dtype=bool)
            listed[near[near >= 0]] = True
            listed[np.argpartition(lexical, n - LEXICAL_DEPTH)[n - LEXICAL_DEPTH:]] = True
            if subset is not None:
                listed &= _mask(n, subset)
            shortlist = np.flatnonzero(listed)
            unit = np.zeros(n, dtype=np.float32)  # filled below for the shortlist and pool
            unit[shortlist] = self.units[shortlist] @ query_vec
            if not len(shortlist):
                return Candidates(np.zeros(0, dtype=np.int64), np.zeros(0))
        lexical_stats = _stats(lexical)
        assistant = (self.assistant_only(weights) if weights.assistant
                     else np.zeros(n, dtype=np.float32))

        def base(positions: np.ndarray) -> np.ndarray:
            return (weights.lexical * _scaled(lexical[positions], lexical_stats)
                    + weights.dense * _scaled(unit[positions], unit_stats))

        if len(shortlist) <= POOL:
            pool = shortlist
        else:  # score turns and neighbours only for the best by the cheap signals
            cheap = base(shortlist) - weights.assistant * assistant[shortlist]
            best = shortlist[np.argpartition(-cheap, POOL)[:POOL]]
            pool = np.unique(np.concatenate([best, self._prev[best], self._next[best]]))
            pool = pool[pool >= 0]
            if subset is not None:  # a neighbour outside the filter is not a candidate
                pool = pool[_mask(n, subset)[pool]]
            if not exhaustive:
                added = pool[~listed[pool]]  # neighbours outside the shortlist
                unit[added] = self.units[added] @ query_vec
        everyone = n <= Z_SAMPLE  # else estimate the turn signal's spread from the sample
        turn_sample = sample_turns.best(query_vec, sample_unit)
        mean, std = _stats(turn_sample)
        turn = turn_sample[pool] if everyone else self.turn_scores(query_vec, pool, unit[pool])
        fused = base(pool) + weights.turn * (turn - mean) / std
        if weights.smoothing:
            fused = _smooth(fused, pool, self._prev, self._next, weights.smoothing)
        spread = _stats(fused)[1]
        fused -= weights.assistant * spread * assistant[pool]
        order = np.argsort(-fused, kind="stable")[:top]
        return Candidates(pool[order], fused[order],
                          Scale(lexical_stats, unit_stats, (mean, std), spread))


def fuse_pool(weights: FusionWeights, scale: Scale, lexical: np.ndarray, unit: np.ndarray,
              turn: np.ndarray, assistant: np.ndarray, prev: np.ndarray,
              nxt: np.ndarray) -> tuple[np.ndarray, float]:
    """The fused scores of a pool of memories scored outside a `UserIndex` (in a database),
    as `UserIndex.search` fuses its pool: signals z-scored on `scale`, neighbours smoothed
    (`prev`/`nxt`: pool indices of each one's same-session neighbours, -1 for none), the
    assistant prior; and the spread of the fused scores."""
    fused = (weights.lexical * _scaled(lexical, scale.lexical or _stats(lexical))
             + weights.dense * _scaled(unit, scale.unit)
             + weights.turn * _scaled(turn, scale.turn))
    if weights.smoothing:
        fused = _smooth(fused, np.arange(len(fused)), prev, nxt, weights.smoothing)
    spread = _stats(fused)[1]
    return fused - weights.assistant * spread * assistant, spread


def _mask(n: int, positions: np.ndarray) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    out[positions] = True
    return out


def _spread(n: int, count: int) -> np.ndarray:
    """`count` positions spread evenly over `n` (all of them when n <= count)."""
    return np.arange(n) if n <= count else np.linspace(0, n - 1, count).astype(np.int64)


def _stats(values: np.ndarray) -> tuple[float, float]:
    """Mean and spread for z-scores (spread 1 when the values are all equal)."""
    return float(values.mean()), float(values.std()) or 1.0


def _scaled(values: np.ndarray, stats: tuple[float, float]) -> np.ndarray:
    return (values - stats[0]) / stats[1]


def _neighbours(sessions: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Position of the previous and next memory of the same session (-1 when none)."""
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    if len(sessions) == n and n > 1:
        same = np.asarray([a == b for a, b in zip(sessions[:-1], sessions[1:])])
        idx = np.arange(1, n)[same]
        prev[idx] = idx - 1
        nxt[idx - 1] = idx
    return prev, nxt


def _smooth(scores: np.ndarray, pool: np.ndarray, prev: np.ndarray, nxt: np.ndarray,
            weight: float) -> np.ndarray:
    """scores[j] + weight * (score of j's previous + next memory); neighbours outside the
    (sorted) pool add 0."""
    def neighbour(of: np.ndarray) -> np.ndarray:
        at = np.minimum(np.searchsorted(pool, of), len(pool) - 1)
        return np.where((of >= 0) & (pool[at] == of), scores[at], 0.0)

    return scores + weight * (neighbour(prev[pool]) + neighbour(nxt[pool]))
