"""Each user's search index, cached in the shared byte budget and kept current from the
store's change log rather than rebuilt."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..lru import ByteLRU
from ..storage.base import Store
from .index import UserIndex

log = logging.getLogger(__name__)


def index_key(user_id: str) -> str:
    """The cache key of a user's index (reranker weights are cached under their names)."""
    return f"index:{user_id}"


class IndexCache:
    """`get(user_id)`: the user's index as of the store's generation for them.

    The index served last is also held outside the byte budget, so that a bank whose index
    alone exceeds `storage.cache_bytes` is not rebuilt on every search when other entries (reranker
    weights) push it out of the cache; the budget is exceeded by that one index at most."""

    def __init__(self, store: Store, cache: ByteLRU, stemmer: Callable | None) -> None:
        self.store, self.cache, self.stemmer = store, cache, stemmer
        self._build_locks = [threading.Lock() for _ in range(64)]
        self._last: tuple[str, UserIndex] | None = None

    def get(self, user_id: str) -> UserIndex:
        """The cached index, brought up to date with what changed since (`UserIndex.apply`),
        or built afresh."""
        generation = self.store.generation(user_id)
        cached = self._cached(user_id)
        if cached is not None and cached.generation == generation:
            return cached
        # one thread updates or builds a user's index; the others then find it done
        with self._build_locks[hash(user_id) % len(self._build_locks)]:
            cached = self._cached(user_id)
            if cached is not None and cached.generation == generation:
                return cached
            index = None
            if cached is not None:
                delta = self.store.index_changes(user_id, cached.generation)
                index = cached.apply(delta) if delta is not None else None
            if index is None:
                index = UserIndex(self.store.index_data(user_id), self.stemmer,
                                  trained=cached)
            if index.nbytes > self.cache.max_bytes and (
                    cached is None or cached.nbytes <= self.cache.max_bytes):
                log.warning("user %r's search index takes %.0f MiB, more than storage.cache_bytes "
                            "(%.0f MiB): it is kept while it is the one last searched; raise "
                            "storage.cache_bytes to keep it beside others", user_id,
                            index.nbytes / 2**20, self.cache.max_bytes / 2**20)
            self.cache.put(index_key(user_id), index, index.nbytes)
            self._last = (user_id, index)
        return index

    def _cached(self, user_id: str) -> UserIndex | None:
        found = self.cache.get(index_key(user_id))
        last = self._last
        if found is None and last is not None and last[0] == user_id:
            found = last[1]
        if found is not None:
            self._last = (user_id, found)
        return found

    def drop(self, user_id: str) -> None:
        """Forget the user's cached index (their data is gone)."""
        self.cache.pop(index_key(user_id))
        if self._last is not None and self._last[0] == user_id:
            self._last = None
