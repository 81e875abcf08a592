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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..storage.base import IndexData, IndexDelta
from .ann import Ann, evenly, size_class
from .bm25 import Lexicon
from .slots import Chain
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


@dataclass(slots=True)
class _Rows:
    """Vector rows of some memories, each with the index of its memory among them."""

    matrix: np.ndarray
    owner: np.ndarray


@dataclass(frozen=True, slots=True)
class Corpus:
    """What BM25 knows of a corpus: documents, their mean length in tokens, and how many
    documents hold each token (bm25s keeps no such figures for texts it did not index)."""

    n: int
    mean_length: float
    freqs: Mapping[str, int]

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
    def of(cls, lexical: np.ndarray, unit: np.ndarray, turn: np.ndarray | None = None
           ) -> Scale:
        """The scale of the signals given (a sample of the bank, or items with no bank to
        compare with: their own); `turn` None: the unit signal is the turn signal too."""
        return cls(_stats(lexical), _stats(unit), _stats(unit if turn is None else turn))

    def cheap(self, weights: FusionWeights, lexical: np.ndarray, unit: np.ndarray
              ) -> np.ndarray:
        """The lexical and dense part of the fused score: what a shortlist is cut by before
        turns and neighbours are scored."""
        return (weights.lexical * _scaled(lexical, self.lexical or _stats(lexical))
                + weights.dense * _scaled(unit, self.unit))

    def fuse(self, weights: FusionWeights, lexical: np.ndarray, unit: np.ndarray,
             turn: np.ndarray, assistant: np.ndarray,
             links: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
             ) -> tuple[np.ndarray, float]:
        """The fused scores of a pool of items and the spread the assistant prior used:
        signals z-scored on this scale, each item's same-session neighbours smoothed in when
        `links` = (sorted pool positions, previous and next position of each, -1 for none)
        is given, items only the assistant wrote lowered by `assistant` spreads."""
        fused = self.cheap(weights, lexical, unit) + weights.turn * _scaled(turn, self.turn)
        if links is not None and weights.smoothing:
            fused = _smooth(fused, *links, weights.smoothing)
        spread = self.fused if self.fused is not None else _stats(fused)[1]
        return fused - weights.assistant * spread * assistant, spread


@dataclass(slots=True)
class Candidates:
    """Scored candidates: positions into the index's ids, best first, and their scores."""

    positions: np.ndarray
    fused: np.ndarray
    scale: Scale | None = None


PER_MEMORY_BYTES = 400
"""Estimated Python-object bytes per memory of an index: its id, metadata and speakers
lists' entries and its slot in the id map (measured with tracemalloc, see tests)."""


class UserIndex:
    """Snapshot of one user's memories: each search sees one state, however the bank moves.

    Built from the whole bank once (`UserIndex(data)`); later changes come in through
    `apply`, which makes the next snapshot without reading or re-indexing the rest.
    """

    def __init__(self, data: IndexData, stemmer: Callable | None = None, *,
                 trained: UserIndex | None = None) -> None:
        """The index of a whole bank; `trained`: an earlier index of the same user, whose
        approximate index's training is reused when the bank is still in its size class."""
        self.stemmer = stemmer
        dim = data.vectors.shape[1] if len(data.vectors) else 0
        chain = Chain(dim)
        n = len(data.ids)
        slots = chain.append(data, 0, 0)
        lexicon = Lexicon.build(tokenize(data.keys, stemmer))
        position = np.arange(n, dtype=np.int64)
        self._set(chain, data.generation, list(data.ids), list(data.metadata) or
                  [{} for _ in data.ids], slots, position, chain.codes(data.sessions, slots),
                  lexicon, max(data.seqs, default=0), len(data.owner))
        before = trained._chain.ann if trained is not None else None
        if before is not None and before.index.d == dim and n > EXACT_LIMIT:
            chain.ann = Ann(self._units_at, slots, before)
        chain.head = self

    def _set(self, chain: Chain, generation: int, ids: list[str], metadata: list[dict],
             slot: np.ndarray, position: np.ndarray, codes: np.ndarray, lexicon: Lexicon,
             last_seq: int, n_rows: int) -> None:
        self._chain = chain
        self.generation = generation
        self.ids = ids
        self.metadata = metadata
        self._slot = slot          # slot of each memory, in bank order
        self._position = position  # position of each slot (-1: dead)
        self._codes = codes
        self._lexicon = lexicon
        self.last_seq = last_seq
        self._n_rows = n_rows
        self._rows = chain.rows[:n_rows]
        self._row_start = chain.row_start[:len(position)]
        self._row_count = chain.row_count[:len(position)]
        self._prev, self._next = _neighbours(codes)
        self._sample = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def corpus(self) -> Corpus:
        """Document frequencies and mean length of the keys' BM25 tokens."""
        lex = self._lexicon
        return Corpus(lex.n_docs, lex.total_length / max(lex.n_docs, 1), lex.frequencies())

    @property
    def nbytes(self) -> int:
        """Bytes this index holds: vectors, BM25 postings, the approximate index, its maps
        (a snapshot's share of what it shares with older ones is counted in full)."""
        chain = self._chain
        arrays = (chain.rows, chain.row_slot, chain.row_start, chain.row_count, self._slot,
                  self._position, self._codes, self._prev, self._next)
        ann = chain.ann.nbytes if chain.ann is not None else 0
        sampled = 0  # the sample's vectors, copied and kept once a large bank is searched
        if len(self.ids) > Z_SAMPLE:
            sample = evenly(len(self.ids), Z_SAMPLE)
            sampled = int(self._row_count[self._slot[sample]].sum()) * chain.rows.itemsize * \
                chain.dim
        return (sum(a.nbytes for a in arrays) + self._lexicon.nbytes + ann + sampled
                + PER_MEMORY_BYTES * len(self._position))

    # changes ------------------------------------------------------------------------------
    def apply(self, delta: IndexDelta) -> UserIndex | None:
        """The next snapshot, with `delta`'s memories added or replaced and its removed ones
        gone, at the cost of those alone; None when a full build is due instead (this is
        not the newest snapshot, the change breaks bank order, or dead slots outnumber
        the live ones)."""
        chain, data = self._chain, delta.data
        dim = data.vectors.shape[1] if len(data.vectors) else chain.dim
        with chain.lock:
            if chain.head is not self:
                return None
            if not len(self._position) and chain.dim != dim:  # an empty bank takes any
                chain.dim, chain.rows = dim, np.zeros((0, dim), dtype=np.float32)
            if len(data.ids) and dim != chain.dim:
                return None
            old = np.asarray([chain.slot_of.get(m, -1) for m in data.ids], dtype=np.int64)
            fresh = old < 0
            if any(s <= self.last_seq for s, f in zip(data.seqs, fresh) if f):
                return None
            gone = np.asarray([chain.slot_of[m] for m in delta.removed if m in chain.slot_of],
                              dtype=np.int64)
            dead = np.concatenate([gone, old[~fresh]])
            n_slots = len(self._position) + len(data.ids)
            if n_slots - (len(self) + int(fresh.sum()) - len(gone)) > max(len(self), 1024):
                return None
            lexicon = self._lexicon.extend(tokenize(data.keys, self.stemmer), dead)
            if lexicon is None:
                return None
            slots = chain.append(data, len(self._position), self._n_rows)
            for mid in delta.removed:
                chain.slot_of.pop(mid, None)
            codes = chain.codes(data.sessions, slots)
            slot, ids, metadata = self._slot.copy(), self.ids, self.metadata
            meta = data.metadata if len(data.metadata) == len(data.ids) else \
                [{} for _ in data.ids]
            at = self._position[old[~fresh]]  # replaced in place
            slot[at] = slots[~fresh]
            all_codes = self._codes.copy()
            all_codes[at] = codes[~fresh]
            if len(at):
                metadata = list(metadata)
                for p, m in zip(at, (m for m, f in zip(meta, fresh) if not f)):
                    metadata[p] = m
            if len(gone):
                keep = np.ones(len(self), dtype=bool)
                keep[self._position[gone]] = False
                slot, all_codes = slot[keep], all_codes[keep]
                ids = [m for m, k in zip(ids, keep) if k]
                metadata = [m for m, k in zip(metadata, keep) if k]
            ids = ids + [m for m, f in zip(data.ids, fresh) if f]
            metadata = metadata + [m for m, f in zip(meta, fresh) if f]
            slot = np.concatenate([slot, slots[fresh]])
            position = np.full(n_slots, -1, dtype=np.int64)
            position[slot] = np.arange(len(slot))
            nxt = UserIndex.__new__(UserIndex)
            nxt.stemmer = self.stemmer
            nxt._set(chain, data.generation, ids, metadata, slot, position,
                     np.concatenate([all_codes, codes[fresh]]), lexicon,
                     max(self.last_seq, max(data.seqs, default=0)),
                     self._n_rows + len(data.owner))
            if chain.ann is not None:
                if size_class(len(nxt)) != chain.ann.size_class or len(nxt) <= EXACT_LIMIT:
                    chain.ann = None  # trained again when a large search needs it
                else:
                    chain.ann.update(nxt._units_at(position[slots]), slots, dead)
            chain.head = nxt
            return nxt

    # signals -----------------------------------------------------------------------------
    def lexical_scores(self, query: str) -> np.ndarray:
        """BM25 score of every memory for the query's content words."""
        return self._lexical_by_slot(query)[self._slot]

    def _lexical_by_slot(self, query: str) -> np.ndarray:
        tokens = tokenize([query], self.stemmer, QUESTION_WORDS)[0]
        if not self.ids or not tokens:
            return np.zeros(len(self._position), dtype=np.float32)
        return self._lexicon.scores(tokens)

    def _units_at(self, positions: np.ndarray) -> np.ndarray:
        """The own vectors of the memories at `positions` (zeros for one without vectors)."""
        slots = self._slot[positions]
        out = self._rows[self._row_start[slots]] if self._n_rows else \
            np.zeros((len(slots), self._chain.dim), dtype=np.float32)
        out[self._row_count[slots] == 0] = 0.0
        return out

    def unit_scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine between the query and each memory's own vector."""
        if not self._n_rows:
            return np.zeros(len(self.ids), dtype=np.float32)
        sims = (self._rows @ query)[self._row_start[self._slot]]
        sims[self._row_count[self._slot] == 0] = 0.0
        return sims

    def turn_scores(self, query: np.ndarray, positions: np.ndarray,
                    fallback: np.ndarray) -> np.ndarray:
        """Best cosine among each listed memory's turn vectors; `fallback` where it has none."""
        return self._turn_rows(positions).best(query, fallback)

    def rows_of(self, position: int) -> np.ndarray:
        """The vector rows of the memory at `position`: its own first, then its turns'."""
        slot = self._slot[position]
        start = self._row_start[slot]
        return self._rows[start:start + self._row_count[slot]]

    def _assistant_flags(self, weights: FusionWeights) -> np.ndarray:
        """Per slot: 1.0 when `weights` count its speakers as the assistant alone, else 0.0
        (kept for the last speaker names asked)."""
        chain, names = self._chain, weights.assistant_speakers
        with chain.lock:
            known = chain.assistant
            if known is None or known[0] != names:
                known = (names, np.zeros(0, dtype=np.float32))
            flags = known[1]
            if len(flags) < len(self._position):
                more = [weights.by_assistant(s) for s in
                        chain.speakers[len(flags):len(self._position)]]
                flags = np.concatenate([flags, np.asarray(more, dtype=np.float32)])
                chain.assistant = (names, flags)
        return flags

    def _turn_rows(self, positions: np.ndarray) -> _TurnRows:
        slots = self._slot[positions]
        starts, counts = self._row_start[slots] + 1, np.maximum(self._row_count[slots] - 1, 0)
        has = counts > 0
        counts, starts = counts[has], starts[has]
        offsets = np.cumsum(counts) - counts
        within = np.arange(int(counts.sum())) - np.repeat(offsets, counts)
        rows = np.repeat(starts, counts) + within
        return _TurnRows(np.ascontiguousarray(self._rows[rows]), offsets, has)

    def _sampled(self) -> tuple[np.ndarray, np.ndarray, _TurnRows]:
        """Z_SAMPLE memories spread over the bank, their unit vectors and turn rows (kept
        for large banks only: on a small one they are all its vectors, copied again)."""
        if self._sample is not None:
            return self._sample
        positions = evenly(len(self.ids), Z_SAMPLE)
        sample = (positions, np.ascontiguousarray(self._units_at(positions)),
                  self._turn_rows(positions))
        if len(self.ids) > Z_SAMPLE:
            self._sample = sample
        return sample

    def dense_scores(self, query: np.ndarray, depth: int) -> dict[int, float]:
        """Best cosine per memory over all its vectors, best first: the memories of the top
        `depth` vector rows (on banks above EXACT_LIMIT, of the approximate index's nearest
        memories)."""
        if not self._n_rows or not len(self.ids):
            return {}
        if len(self.ids) > EXACT_LIMIT:
            near = self._near(query, max(depth, DEPTH))
            rows = self._rows_at(near)
            sims = rows.matrix @ query
            best = np.full(len(near), -np.inf, dtype=np.float32)
            np.maximum.at(best, rows.owner, sims)
            order = np.argsort(-best, kind="stable")[:depth]
            return {int(near[i]): float(best[i]) for i in order if np.isfinite(best[i])}
        sims = self._rows @ query
        owners = self._position[self._chain.row_slot[:self._n_rows]]
        sims[owners < 0] = -np.inf
        depth = min(depth, int((owners >= 0).sum()))
        if not depth:
            return {}
        cut = -np.partition(-sims, depth - 1)[depth - 1]
        top = np.flatnonzero(sims >= cut)  # ties broken by bank order, as a rebuild would
        top = top[np.lexsort((top, owners[top], -sims[top]))][:depth]
        out: dict[int, float] = {}
        for row in top:
            out.setdefault(int(owners[row]), float(sims[row]))
        return out

    def _rows_at(self, positions: np.ndarray) -> _Rows:
        """Every vector row of the memories at `positions`, with the index of its memory."""
        slots = self._slot[positions]
        counts = self._row_count[slots]
        offsets = np.cumsum(counts) - counts
        rows = np.repeat(self._row_start[slots], counts) + \
            (np.arange(int(counts.sum())) - np.repeat(offsets, counts))
        return _Rows(self._rows[rows], np.repeat(np.arange(len(positions)), counts))

    def _near(self, query: np.ndarray, depth: int) -> np.ndarray:
        """Positions of the approximate index's nearest memories (sorted, unique)."""
        chain = self._chain
        with chain.lock:
            ann = chain.ann
            if ann is None or ann.size_class != size_class(len(self)):
                ann = Ann(self._units_at, self._slot, ann)
                if chain.head is self:  # an older snapshot's stays its own
                    chain.ann = ann
        slots = ann.search(query, depth)
        slots = slots[(slots >= 0) & (slots < len(self._position))]
        positions = self._position[slots]
        return np.unique(positions[positions >= 0])

    # ranking --------------------------------------------------------------------------------
    def search(self, query_text: str, query_vec: np.ndarray, *, top: int,
               weights: FusionWeights = FusionWeights(), exact: bool | None = None,
               subset: np.ndarray | None = None) -> Candidates:
        """The fused top-`top` memories for a query (only those at the sorted positions
        `subset`, when given: a metadata filter's).

        Banks of up to EXACT_LIMIT memories (or any bank with `exact=True`, or a subset of
        up to EXACT_LIMIT) are scored exhaustively. Larger ones score a shortlist: the IVF
        index's nearest DEPTH memories and BM25's best LEXICAL_DEPTH, with the dense signal's
        spread estimated from a sample; nothing there costs a pass over the whole bank but
        BM25's posting lists. Signals are z-scored over the whole bank.
        """
        n = len(self.ids)
        if not n or (subset is not None and not len(subset)):
            return Candidates(np.zeros(0, dtype=np.int64), np.zeros(0))
        sample, sample_units, sample_turns = self._sampled()
        sample_unit = sample_units @ query_vec
        exhaustive = ((n <= EXACT_LIMIT if exact is None else exact)
                      or n <= 2 * (DEPTH + LEXICAL_DEPTH)
                      or (subset is not None and len(subset) <= EXACT_LIMIT))
        signals = (self._everywhere(query_text, query_vec, subset) if exhaustive else
                   self._shortlisted(query_text, query_vec, subset, _stats(sample_unit)))
        if not len(signals.positions):
            return Candidates(np.zeros(0, dtype=np.int64), np.zeros(0))
        flags = (self._assistant_flags(weights) if weights.assistant
                 else np.zeros(len(self._position), dtype=np.float32))

        def assistant(at: np.ndarray) -> np.ndarray:
            return flags[self._slot[at]]

        turn_sample = sample_turns.best(query_vec, sample_unit)
        scale = Scale(signals.lexical_stats, signals.unit_stats, _stats(turn_sample))
        pool = self._pool(signals, scale, weights, assistant, subset)
        unit = signals.unit_at(pool)
        everyone = n <= Z_SAMPLE  # else estimate the turn signal's spread from the sample
        turn = turn_sample[pool] if everyone else self.turn_scores(query_vec, pool, unit)
        fused, spread = scale.fuse(weights, signals.lexical_at(pool), unit, turn,
                                   assistant(pool), (pool, self._prev, self._next))
        order = np.argsort(-fused, kind="stable")[:top]
        return Candidates(pool[order], fused[order], replace(scale, fused=spread))

    def _everywhere(self, query_text: str, query_vec: np.ndarray,
                    subset: np.ndarray | None) -> _Signals:
        """Every memory's signals (those of `subset` to rank)."""
        lexical, unit = self.lexical_scores(query_text), self.unit_scores(query_vec)
        positions = np.arange(len(self.ids)) if subset is None else subset
        return _Signals(positions, _stats(lexical), _stats(unit), lexical.__getitem__,
                        unit.__getitem__)

    def _shortlisted(self, query_text: str, query_vec: np.ndarray, subset: np.ndarray | None,
                     unit_stats: tuple[float, float]) -> _Signals:
        """The approximate index's nearest memories and BM25's best, with BM25's exact scale
        over the bank (from the memories it scores at all) and the dense one given."""
        by_slot = self._lexical_by_slot(query_text)
        hit = np.flatnonzero(by_slot)
        values = by_slot[hit].astype(np.float64)
        n = len(self.ids)
        mean = float(values.sum()) / n
        spread = math.sqrt(max(float(np.square(values).sum()) / n - mean * mean, 0.0)) or 1.0
        if len(hit) > LEXICAL_DEPTH:
            hit = hit[np.argpartition(-values, LEXICAL_DEPTH)[:LEXICAL_DEPTH]]
        positions = np.union1d(self._near(query_vec, DEPTH), self._position[hit])
        if subset is not None:
            positions = positions[_within(subset, positions)]
        return _Signals(positions, (mean, spread), unit_stats,
                        lambda at: by_slot[self._slot[at]],
                        lambda at: self._units_at(at) @ query_vec)

    def _pool(self, signals: _Signals, scale: Scale, weights: FusionWeights,
              assistant: Callable[[np.ndarray], np.ndarray],
              subset: np.ndarray | None) -> np.ndarray:
        """The sorted positions scored in full (turns, neighbours): all listed ones, or on a
        long list the best POOL by the cheap signals and their session neighbours."""
        listed = signals.positions
        if len(listed) <= POOL:
            return listed
        cheap = (scale.cheap(weights, signals.lexical_at(listed), signals.unit_at(listed))
                 - weights.assistant * assistant(listed))
        best = listed[np.argpartition(-cheap, POOL)[:POOL]]
        pool = np.unique(np.concatenate([best, self._prev[best], self._next[best]]))
        pool = pool[pool >= 0]
        if subset is not None:  # a neighbour outside the filter is not a candidate
            pool = pool[_within(subset, pool)]
        return pool


@dataclass(slots=True)
class _Signals:
    """A query's lexical and dense signals: their scale over the bank, their values at any
    positions, and the sorted positions to rank."""

    positions: np.ndarray
    lexical_stats: tuple[float, float]
    unit_stats: tuple[float, float]
    lexical_at: Callable[[np.ndarray], np.ndarray]
    unit_at: Callable[[np.ndarray], np.ndarray]


def _within(sorted_positions: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Whether each of `positions` is among `sorted_positions`."""
    if not len(sorted_positions):
        return np.zeros(len(positions), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_positions, positions), len(sorted_positions) - 1)
    return sorted_positions[at] == positions


def _stats(values: np.ndarray) -> tuple[float, float]:
    """Mean and spread for z-scores (spread 1 when the values are all equal)."""
    return float(values.mean()), float(values.std()) or 1.0


def _scaled(values: np.ndarray, stats: tuple[float, float]) -> np.ndarray:
    return (values - stats[0]) / stats[1]


def _neighbours(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position of the previous and next memory of the same session (-1 when none)."""
    n = len(codes)
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    idx = np.flatnonzero(codes[1:] == codes[:-1]) + 1
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
