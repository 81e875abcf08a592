"""A query's candidates: its vector and the fused top memories (from the user's index or
inside the database) with the open turns they do not cover, drawn deeper on demand."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..config import MemoryConfig
from ..metadata import matches
from ..models.embed import Embedder, query_vectors
from ..storage.base import Store
from ..types import Memory
from .cache import IndexCache
from .dbsearch import DatabaseSearcher
from .explain import Laps
from .index import FusionWeights, Scale, UserIndex
from .provisional import OpenTurns
from .validity import valid_at

DECODED_MOST = 8192
"""Most memories a user's index snapshot keeps decoded between searches."""

Pooled = tuple[Memory, float, np.ndarray]
"""A search candidate before reranking: the memory, its fused score, its vector rows."""


@dataclass(slots=True)
class Pool:
    """A query's vector and its fused candidates, drawn deeper on demand: `fused(top,
    known)` gives the best `top`, reading again none of the memories in `known`."""

    query_vec: np.ndarray
    fused: Callable[[int, Mapping[str, Pooled]], list[Pooled]]
    as_of: datetime | None
    exhausted: bool = False  # the last draw holds every candidate there is
    known: dict[str, Pooled] = field(default_factory=dict)

    def draw(self, n: int) -> list[Pooled]:
        """The best `n` candidates (with `as_of`: those said by then and not yet superseded);
        a deeper draw starts with a shallower one's."""
        drawn = n * 3 if self.as_of else n
        while True:
            found = self.fused(drawn, self.known)
            self.known.update((f[0].id, f) for f in found)
            full = len(found) == drawn
            if self.as_of is not None:  # what was true then
                found = [f for f in found if valid_at(f[0], self.as_of)]
            if len(found) >= n or not full:
                self.exhausted = not full
                return found[:n]
            drawn *= 4


class CandidateSource:
    """Where a search's candidates come from: the user's index (or the database, `database`)
    and the turns not reflected yet (`open_turns`)."""

    def __init__(self, store: Store, embedder: Embedder, config: MemoryConfig,
                 indexes: IndexCache, database: DatabaseSearcher, open_turns: OpenTurns,
                 weights: FusionWeights) -> None:
        self.store, self.embedder, self.config = store, embedder, config
        self.indexes, self.database, self.open_turns = indexes, database, open_turns
        self.weights = weights

    def pool(self, user_id: str, query: str, wanted: Mapping[str, Any],
             session_id: str | None, as_of: datetime | None, laps: Laps) -> Pool | None:
        """The query's vector and its fused candidates, memories and then the open turns
        they do not cover (None: nothing to search)."""
        # open turns before the index: a turn reflected in between is then in both, and
        # dropped from the open ones below (the other order could miss it in both). The
        # query itself, logged before it is searched for, is no hit.
        opened = [(t, m) for t, m in self.open_turns.open(user_id)
                  if t.session_id != session_id and t.text.strip() != query.strip()
                  and matches(m, wanted)] if self.config.search.immediate_recall else []
        index = None if self.database.wanted(user_id) else self.indexes.get(user_id)
        if index is not None and not len(index) and not opened:
            return None
        laps.lap("open turns")
        query_vec = query_vectors(self.embedder, [query])[0]
        laps.lap("embed")

        def fused(top: int, known: Mapping[str, Pooled]) -> list[Pooled]:
            if index is None:
                found, scale = self._database_candidates(user_id, query, query_vec, top,
                                                         wanted, known)
            else:
                found, scale = self._memory_candidates(user_id, index, query, query_vec, top,
                                                       wanted, known)
            covered = {r for m, _, _ in found for r in m.refs}
            found += [(p.memory, p.score, p.vectors) for p in self.open_turns.score(
                user_id, [(t, m) for t, m in opened if t.id not in covered], query, query_vec,
                self.weights, scale, index.corpus if scale and index is not None else None,
                top)]
            laps.lap("retrieval")
            return sorted(found, key=lambda item: -item[1])[:top]

        return Pool(query_vec, fused, as_of)

    def _memory_candidates(self, user_id: str, index: UserIndex, query: str,
                           query_vec: np.ndarray, top: int, wanted: Mapping[str, Any],
                           known: Mapping[str, Pooled]) -> tuple[list[Pooled], Scale | None]:
        """The fused top memories that match `wanted`, each with its score and vector rows,
        and the scale their signals were z-scored on (None: nothing scored); the memories
        in `known` (an earlier draw's) are not read again."""
        if not len(index):
            return [], None
        subset = np.flatnonzero([matches(m, wanted) for m in index.metadata]) \
            if wanted else None
        found = index.search(query, query_vec, top=top, weights=self.weights, subset=subset)
        ids = [index.ids[p] for p in found.positions]
        decoded = index.decoded  # shared by searches: what they return are copies
        stored = {i: known[i][0] for i in ids if i in known}
        stored.update((i, decoded[i]) for i in ids if i not in stored and i in decoded)
        read = self.store.memories(user_id, [i for i in ids if i not in stored])
        if len(decoded) < DECODED_MOST:
            decoded.update((m.id, m) for m in read)
        stored.update((m.id, m) for m in read)
        # a memory forgotten since the index snapshot was taken drops out
        return [(stored[mid], float(score), index.rows_of(p))
                for mid, p, score in zip(ids, found.positions, found.fused)
                if mid in stored], found.scale

    def _database_candidates(self, user_id: str, query: str, query_vec: np.ndarray, top: int,
                             wanted: Mapping[str, Any], known: Mapping[str, Pooled]
                             ) -> tuple[list[Pooled], Scale | None]:
        """`_memory_candidates` searched inside the database (`search.backend`)."""
        found, scale = self.database.candidates(user_id, query, query_vec, top, wanted)
        new = [mid for mid, _ in found if mid not in known]
        stored = {m.id: m for m in self.store.memories(user_id, new)}
        rows = self.store.memory_vectors(user_id, new)
        for mid, _ in found:
            if mid in known:
                stored[mid], rows[mid] = known[mid][0], known[mid][2]
        return [(stored[mid], score, rows[mid]) for mid, score in found
                if mid in stored and mid in rows], scale
