"""In-database search: the store's SQL shortlists a user's memories (pgvector HNSW over their
own vectors, PostgreSQL full-text rank over their keys) and scores them; the signals are
fused here as the in-process index fuses its own (`Scale.fuse`), so no process loads a
user's vectors and every process sees every other's writes at its next search.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInputError
from ..language.tokens import tokenize
from ..storage.base import DatabaseSearch, SignalRow, Store
from .index import (
    DEPTH,
    LEXICAL_DEPTH,
    POOL,
    QUESTION_WORDS,
    Z_SAMPLE,
    FusionWeights,
    Scale,
)

if TYPE_CHECKING:
    from ..lru import ByteLRU
    from ..storage.postgres.search import Sample

AUTO_MIN_MEMORIES = 20_000
"""`search.backend="auto"` searches a user's bank in the database from this many memories:
there, loading and indexing it in a process before its first search (4 s, 350 MB more)
costs as much as dozens of searches' extra time in the database (docs/postgres.md). The
database's search indexes are built in the background when the first user reaches it; that
user's searches stay in process until they are valid."""

LEXICAL = LEXICAL_DEPTH // 4
"""Memories the full-text shortlist keeps (fewer than in process: each costs the server its
vectors' distances: at 100,000 memories of the speed bench's Zipf bank, top-20 agreement
with the in-process search moved by 0.1 point from 2,000 to 500, the search took 30 ms less)."""

DENSE = DEPTH // 3
"""Memories the HNSW shortlist keeps (fewer than in process: each costs the server graph
steps (`ef_search`), a BM25 score and its turn vectors' distances; at 100,000 memories of
the speed bench's Zipf bank, top-20 agreement with the in-process search was 76.9 % at 300
and 76.8 % at 80 and 100, and the search took about half as long at 100)."""

SAMPLE = Z_SAMPLE // 4
"""Memories spread over the bank whose signals give their mean and spread (`Sample`: read
once per change of the bank, 2.3 MB for 384-d vectors whatever the bank's size, kept in
the shared `storage.cache_bytes` budget)."""


def sample_key(user_id: str) -> str:
    """The cache key of a user's `Sample` (`read.cache.index_key` names their index's)."""
    return f"sample:{user_id}"


class DatabaseSearcher:
    """Chooses, per user, where a search runs, and gathers in-database candidates."""

    def __init__(self, store: Store, weights: FusionWeights, backend: str,
                 cache: ByteLRU) -> None:
        if backend == "database" and not isinstance(store, DatabaseSearch):
            raise InvalidInputError(
                f"search.backend='database' needs a store that searches in its database "
                f"(PostgreSQL); {type(store).__name__} is searched in process")
        self.store = store if isinstance(store, DatabaseSearch) else None
        self.weights = weights
        self.backend = backend
        self._sizes: dict[str, tuple[int, int]] = {}
        """user → (generation, bank size): `auto` reads the size once per change."""
        self._cache = cache
        """Holds each user's (generation, `Sample`) beside the in-process indexes."""
        self._lock = threading.Lock()
        self._dim: int | None = None
        self._ready = False

    @property
    def ready(self) -> bool:
        """Whether this instance has found the database's search indexes valid."""
        return self._ready

    def prepare(self, dim: int | None) -> None:
        """On open: `search.backend="database"` builds the database's search indexes now;
        `auto` waits until a user first reaches `AUTO_MIN_MEMORIES`, so that no write below
        it pays for maintaining them."""
        self._dim = int(dim) if dim else None
        if self.backend == "database":
            self._ensure_indexes()

    def wanted(self, user_id: str) -> bool:
        """Whether this user's search runs in the database; with `auto`, not before the
        search indexes are valid (a search never waits for their build)."""
        if self.store is None or self.backend == "process":
            return False
        if self.backend == "auto" and self._size(user_id) < AUTO_MIN_MEMORIES:
            return False
        return self._ensure_indexes()

    def _ensure_indexes(self) -> bool:
        """Whether the search indexes are valid: built if missing, in the background with
        `auto`; not while neither the embedder nor the store knows the vectors' dimension."""
        with self._lock:
            if not self._ready:
                dim = self._dim or self.store.vector_dim()
                if dim:
                    self._ready = self.store.prepare_search(
                        dim, wait=self.backend == "database")
            return self._ready

    def _size(self, user_id: str) -> int:
        return self._bank(user_id)[1]

    def _bank(self, user_id: str) -> tuple[int, int]:
        """The user's bank generation and size (read once per change)."""
        generation = self.store.generation(user_id)
        cached = self._sizes.get(user_id)
        if cached is None or cached[0] != generation:
            cached = (generation, self.store.search_size(user_id))
            with self._lock:
                self._sizes[user_id] = cached
                while len(self._sizes) > 10_000:
                    self._sizes.pop(next(iter(self._sizes)))
        return cached

    def _sample(self, user_id: str, generation: int) -> Sample:
        """The user's `Sample` of this generation: read from the store once per change."""
        cached = self._cache.get(sample_key(user_id))
        if cached is not None and cached[0] == generation:
            return cached[1]
        sample = self.store.search_sample(user_id, SAMPLE)
        self._cache.put(sample_key(user_id), (generation, sample), sample.nbytes)
        return sample

    def drop(self, user_id: str) -> None:
        """Forget what this process keeps of the user's bank (their data is gone)."""
        self._cache.pop(sample_key(user_id))
        with self._lock:
            self._sizes.pop(user_id, None)

    def candidates(self, user_id: str, query: str, query_vec: np.ndarray, top: int,
                   filters: Mapping[str, Sequence[Any]]
                   ) -> tuple[list[tuple[str, float]], Scale | None]:
        """The fused top memory ids matching `filters` with their scores, and the scale of
        their dense signals (its lexical part is None: BM25 over PostgreSQL's lexemes is not
        on the in-process tokens' scale)."""
        store, weights = self.store, self.weights
        generation, size = self._bank(user_id)
        sample = self._sample(user_id, generation)
        words = store.search_terms(user_id, tokenize([query], None, QUESTION_WORDS)[0], size,
                                   sample.avg_length)
        shortlist = store.search_shortlist(user_id, words, query_vec, filters, dense=DENSE,
                                           lexical=LEXICAL, expected=size)
        if not shortlist:
            return [], None
        signals = sample.signals(words, query_vec)
        if not len(signals):  # nothing sampled (a bank emptied meanwhile): the shortlist's own
            signals = np.asarray([(r.lexical, r.unit, r.turn) for r in shortlist])
        scale = Scale.of(*(signals[:, i] for i in range(3)))
        if len(shortlist) > POOL:  # score turns and neighbours only for the best by the cheap
            cheap = (scale.cheap(weights, _column(shortlist, "lexical"),
                                 _column(shortlist, "unit"))
                     - weights.assistant * self._assistant(shortlist))
            shortlist = [shortlist[i] for i in np.argpartition(-cheap, POOL)[:POOL]]
        links, extra = store.search_pool(user_id, [r.id for r in shortlist], words, query_vec,
                                         filters)
        pool = [SignalRow(r.id, r.speakers, r.lexical, r.unit, r.turn, *links.get(r.id, ()))
                for r in shortlist] + extra
        fused, spread = scale.fuse(
            weights, *(_column(pool, name) for name in ("lexical", "unit", "turn")),
            self._assistant(pool), (np.arange(len(pool)), *_links(pool)))
        order = np.argsort(-fused, kind="stable")[:top]
        return ([(pool[i].id, float(fused[i])) for i in order],
                Scale(None, scale.unit, scale.turn, spread))

    def _assistant(self, rows: list[SignalRow]) -> np.ndarray:
        if not self.weights.assistant:
            return np.zeros(len(rows), dtype=np.float32)
        prior = {s: self.weights.by_assistant(json.loads(s)) for s in {r.speakers for r in rows}}
        return np.asarray([prior[r.speakers] for r in rows], dtype=np.float32)


def _links(rows: list[SignalRow]) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of each row's previous and next neighbour (-1: none among the rows); a
    neighbour's row knows its links from the rows that name it."""
    at = {r.id: i for i, r in enumerate(rows)}
    prev = np.full(len(rows), -1, dtype=np.int64)
    nxt = np.full(len(rows), -1, dtype=np.int64)
    for i, r in enumerate(rows):
        if r.prev in at:
            prev[i], nxt[at[r.prev]] = at[r.prev], i
        if r.next in at:
            nxt[i], prev[at[r.next]] = at[r.next], i
    return prev, nxt


def _column(rows: list[SignalRow], name: str) -> np.ndarray:
    return np.asarray([getattr(r, name) for r in rows], dtype=np.float32)
