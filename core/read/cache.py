"""Each user's search index, cached in the shared byte budget and kept current from the
store's change log rather than rebuilt."""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..lru import ByteLRU
from ..storage.base import Store
from .index import UserIndex


def index_key(user_id: str) -> str:
    """The cache key of a user's index (reranker weights are cached under their names)."""
    return f"index:{user_id}"


class IndexCache:
    """`get(user_id)`: the user's index as of the store's generation for them."""

    def __init__(self, store: Store, cache: ByteLRU, stemmer: Callable | None) -> None:
        self.store, self.cache, self.stemmer = store, cache, stemmer
        self._build_locks = [threading.Lock() for _ in range(64)]

    def get(self, user_id: str) -> UserIndex:
        """The cached index, brought up to date with what changed since (`UserIndex.apply`),
        or built afresh."""
        generation = self.store.generation(user_id)
        key = index_key(user_id)
        cached = self.cache.get(key)
        if cached is not None and cached.generation == generation:
            return cached
        # one thread updates or builds a user's index; the others then find it done
        with self._build_locks[hash(user_id) % len(self._build_locks)]:
            cached = self.cache.get(key)
            if cached is not None and cached.generation == generation:
                return cached
            index = None
            if cached is not None:
                delta = self.store.index_changes(user_id, cached.generation)
                index = cached.apply(delta) if delta is not None else None
            if index is None:
                index = UserIndex(self.store.index_data(user_id), self.stemmer,
                                  trained=cached)
            self.cache.put(key, index, index.nbytes)
        return index

    def drop(self, user_id: str) -> None:
        """Forget the user's cached index (their data is gone)."""
        self.cache.pop(index_key(user_id))
