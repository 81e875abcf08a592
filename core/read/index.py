"""A user's search index: BM25 over keys, unit and turn vectors (row 0 of a memory is its
own, rows 1.. its turns'), fused into one ranking (`fusion`)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace

import numpy as np

from ..background import in_background
from ..language.tokens import english_stemmer as english_stemmer  # and by the front door
from ..language.tokens import tokenize
from ..storage.base import IndexData, IndexDelta
from ..types import Memory
from .ann import Ann, evenly, size_class
from .blas_threads import one_blas_thread
from .bm25 import Corpus, Lexicon
from .bm25 import bm25_index as bm25_index  # imported from here by the tools
from .fusion import Candidates, FusionWeights, Scale, stats
from .listing import Listing
from .signals import Signals, distinct, distinct_groups, looked_up, signal_at, sparse_stats, within
from .slots import SharedSlots, SlotVectors, TurnRows, best_of, neighbours

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
        chain = SharedSlots(dim)
        n = len(data.ids)
        slots = chain.append(data, 0, 0)
        lexicon = Lexicon.build(tokenize(data.keys, stemmer))
        position = np.arange(n, dtype=np.int64)
        listing = Listing(list(data.ids), list(data.metadata) or [{} for _ in data.ids],
                          slots, chain.codes(data.sessions, slots))
        self._set(chain, data.generation, listing, position, lexicon,
                  max(data.seqs, default=0), len(data.owner))
        before = trained._chain.ann if trained is not None else None
        if before is not None and before.index.d == dim and n > EXACT_LIMIT:
            chain.ann = Ann(self._units_at, slots, before)
        chain.head = self

    def _set(self, chain: SharedSlots, generation: int, listing: Listing, position: np.ndarray,
             lexicon: Lexicon, last_seq: int, n_rows: int) -> None:
        self._chain = chain
        self.generation = generation
        self.ids = listing.ids
        self.metadata = listing.metadata
        self._slot = listing.slot  # slot of each memory, in bank order
        self._position = position  # position of each slot (-1: dead)
        self._codes = listing.codes
        self._lexicon = lexicon
        self.last_seq = last_seq
        self._n_rows = n_rows
        self._vectors = SlotVectors(chain.rows[:n_rows], chain.row_start[:len(position)],
                                    chain.row_count[:len(position)])
        self._prev, self._next = neighbours(listing.codes)
        self._sample = None
        self.decoded: dict[str, Memory] = {}
        """Memories a search read at this snapshot's generation, by id, for the next to
        reuse (at most `read.pool.DECODED_MOST`): a change to any memory, its validity
        too, makes a new snapshot."""

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
            sampled = int(self._vectors.count[self._slot[sample]].sum()) * chain.rows.itemsize * \
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
            meta = data.metadata if len(data.metadata) == len(data.ids) else \
                [{} for _ in data.ids]
            listing = Listing(self.ids, self.metadata, self._slot, self._codes).changed(
                self._position, old, gone, data.ids, meta, slots, codes)
            position = np.full(n_slots, -1, dtype=np.int64)
            position[listing.slot] = np.arange(len(listing.slot))
            nxt = UserIndex.__new__(UserIndex)
            nxt.stemmer = self.stemmer
            nxt._set(chain, data.generation, listing, position, lexicon,
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
        tokens = self._tokens(query)
        if not tokens:
            return np.zeros(len(self.ids), dtype=np.float32)
        return self._lexicon.scores(tokens)[self._slot]

    def _lexical_hits(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """The slots whose key holds a query word (ascending) and their BM25 scores."""
        tokens = self._tokens(query)
        if not tokens:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return self._lexicon.hits(tokens)

    def _tokens(self, query: str) -> list[str]:
        """The query's BM25 tokens (none on an empty bank)."""
        return tokenize([query], self.stemmer, QUESTION_WORDS)[0] if self.ids else []

    def _units_at(self, positions: np.ndarray) -> np.ndarray:
        """The own vectors of the memories at `positions` (zeros for one without vectors)."""
        return self._vectors.units(self._slot[positions])

    def unit_scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine between the query and each memory's own vector."""
        if not self._n_rows:
            return np.zeros(len(self.ids), dtype=np.float32)
        return self._vectors.own(self._vectors.rows @ query, self._slot)

    def turn_scores(self, query: np.ndarray, positions: np.ndarray,
                    fallback: np.ndarray) -> np.ndarray:
        """Best cosine among each listed memory's turn vectors; `fallback` where it has none."""
        return self._vectors.turns(self._slot[positions]).best(query, fallback)

    def rows_of(self, position: int) -> np.ndarray:
        """The vector rows of the memory at `position`: its own first, then its turns'."""
        return self._vectors.slot_rows(self._slot[position])

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

    def _sampled(self) -> tuple[np.ndarray, TurnRows]:
        """The unit vectors and turn rows of Z_SAMPLE memories spread over a large bank."""
        if self._sample is None:
            positions = evenly(len(self.ids), Z_SAMPLE)
            self._sample = (np.ascontiguousarray(self._units_at(positions)),
                            self._vectors.turns(self._slot[positions]))
        return self._sample

    def dense_scores(self, query: np.ndarray, depth: int) -> dict[int, float]:
        """Best cosine per memory over all its vectors, best first: the memories of the top
        `depth` vector rows (on banks above EXACT_LIMIT, of the approximate index's nearest
        memories)."""
        if not self._n_rows or not len(self.ids):
            return {}
        if len(self.ids) > EXACT_LIMIT:
            near = self._near(query, max(depth, DEPTH))
            rows = self._vectors.every_row(self._slot[near])
            sims = rows.matrix @ query
            best = np.full(len(near), -np.inf, dtype=np.float32)
            np.maximum.at(best, rows.owner, sims)
            order = np.argsort(-best, kind="stable")[:depth]
            return {int(near[i]): float(best[i]) for i in order if np.isfinite(best[i])}
        sims = self._vectors.rows @ query
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
        return distinct(positions[positions >= 0])

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
        if not self.ids or (subset is not None and not len(subset)):
            return Candidates(np.zeros(0, dtype=np.int64), np.zeros(0))
        with one_blas_thread():
            return self._ranked(query_text, query_vec, top, weights, exact, subset)

    def _ranked(self, query_text: str, query_vec: np.ndarray, top: int,
                weights: FusionWeights, exact: bool | None,
                subset: np.ndarray | None) -> Candidates:
        """`search` on a bank that has memories to rank."""
        n = len(self.ids)
        everyone = n <= Z_SAMPLE  # else the turn signal's spread comes from a sample
        if everyone:  # the sample is every memory: one product gives both dense signals
            unit_all, turn_sample = self._dense_everywhere(query_vec)
            signals = self._everywhere(query_text, unit_all, subset)
        else:
            exhaustive = ((n <= EXACT_LIMIT if exact is None else exact)
                          or n <= 2 * (DEPTH + LEXICAL_DEPTH)
                          or (subset is not None and len(subset) <= EXACT_LIMIT))
            # the IVF lookup (faiss frees the GIL) runs beside the sample and BM25
            near = None if exhaustive else in_background(self._near, query_vec, DEPTH)
            sample_units, sample_turns = self._sampled()
            sample_unit = sample_units @ query_vec
            turn_sample = sample_turns.best(query_vec, sample_unit)
            signals = (self._everywhere(query_text, self.unit_scores(query_vec), subset)
                       if near is None else
                       self._shortlisted(query_text, query_vec, near, subset,
                                         stats(sample_unit)))
        if not len(signals.positions):
            return Candidates(np.zeros(0, dtype=np.int64), np.zeros(0))
        flags = self._assistant_flags(weights) if weights.assistant else None

        def assistant(at: np.ndarray) -> np.ndarray:
            return flags[self._slot[at]] if flags is not None else \
                np.zeros(len(at), dtype=np.float32)

        scale = Scale(signals.lexical_stats, signals.unit_stats, stats(turn_sample))
        pool = self._pool(signals, scale, weights, assistant, subset)
        unit = signals.unit_at(pool)
        turn = turn_sample[pool] if everyone else self.turn_scores(query_vec, pool, unit)
        fused, spread = scale.fuse(weights, signals.lexical_at(pool), unit, turn,
                                   assistant(pool), (pool, self._prev, self._next))
        order = np.argsort(-fused, kind="stable")[:top]
        return Candidates(pool[order], fused[order], replace(scale, fused=spread))

    def _everywhere(self, query_text: str, unit: np.ndarray,
                    subset: np.ndarray | None) -> Signals:
        """Every memory's signals, given its `unit` cosines (those of `subset` to rank)."""
        lexical = self.lexical_scores(query_text)
        positions = np.arange(len(self.ids)) if subset is None else subset
        return Signals(positions, stats(lexical), stats(unit), lexical.__getitem__,
                       unit.__getitem__)

    def _dense_everywhere(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every memory's unit cosine and best turn cosine (its unit one when it has no
        turns), from one product over all vector rows."""
        if not self._n_rows:
            zeros = np.zeros(len(self.ids), dtype=np.float32)
            return zeros, zeros
        sims = self._vectors.rows @ query
        unit = self._vectors.own(sims, self._slot)
        rows, offsets, has = self._vectors.turn_index(self._slot)
        return unit, best_of(sims[rows], offsets, has, unit)

    def _shortlisted(self, query_text: str, query_vec: np.ndarray, near: Future[np.ndarray],
                     subset: np.ndarray | None, unit_stats: tuple[float, float]) -> Signals:
        """The approximate index's nearest memories (`near`, being found) and BM25's best,
        with BM25's exact scale over the bank (from the memories it scores at all) and the
        dense one given; BM25's best are scored before the nearest are waited for."""
        hit, scores = self._lexical_hits(query_text)
        best = np.arange(len(hit)) if len(hit) <= LEXICAL_DEPTH else \
            np.argpartition(-scores, LEXICAL_DEPTH)[:LEXICAL_DEPTH]
        lexical_best = self._position[hit[best]]
        units_best = self._units_at(lexical_best) @ query_vec
        nearest = near.result()
        positions, group = distinct_groups(np.concatenate([nearest, lexical_best]))
        lexical = np.empty(len(positions), dtype=np.float32)  # BM25's best's scores known
        lexical[group[len(nearest):]] = scores[best]
        lexical[group[:len(nearest)]] = looked_up(hit, scores, self._slot[nearest])[0]
        unit = np.empty(len(positions), dtype=np.float32)
        unit[group[len(nearest):]] = units_best
        unit[group[:len(nearest)]] = self._units_at(nearest) @ query_vec
        if subset is not None:
            keep = within(subset, positions)
            positions, lexical, unit = positions[keep], lexical[keep], unit[keep]
        return Signals(positions, sparse_stats(scores, len(self.ids)), unit_stats,
                       signal_at(positions, lexical,
                            lambda at: looked_up(hit, scores, self._slot[at])[0]),
                       signal_at(positions, unit, lambda at: self._units_at(at) @ query_vec))

    def _pool(self, signals: Signals, scale: Scale, weights: FusionWeights,
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
        pool = distinct(np.concatenate([best, self._prev[best], self._next[best]]))
        pool = pool[pool >= 0]
        if subset is not None:  # a neighbour outside the filter is not a candidate
            pool = pool[within(subset, pool)]
        return pool
