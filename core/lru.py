"""A thread-safe least-recently-used map bounded by bytes (users' indexes, reranker weights)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class ByteLRU(Generic[V]):
    """Values with their sizes; putting one evicts the least recently used until the total
    fits `max_bytes` again. The value just put always stays, even when it alone is larger.

    Several owners may share one (one budget for all): each passes `on_evict` with its
    values, and it is called for them whoever's put evicts them."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._items: OrderedDict[str, tuple[V, int, Callable[[str, V], None] | None]] = \
            OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: str, value: V, size: int,
            on_evict: Callable[[str, V], None] | None = None) -> list[str]:
        """Store `value` as the most recently used; returns the keys evicted to make room,
        after calling the `on_evict` each was put with (outside the lock)."""
        with self._lock:
            self._discard(key)
            self._items[key] = (value, size, on_evict)
            self.nbytes += size
            evicted = []
            while self.nbytes > self.max_bytes and len(self._items) > 1:
                oldest = next(iter(self._items))
                evicted.append((oldest, self._items[oldest]))
                self._discard(oldest)
        for old, (old_value, _, callback) in evicted:
            if callback is not None:
                callback(old, old_value)
        return [old for old, _ in evicted]

    def pop(self, key: str) -> None:
        with self._lock:
            self._discard(key)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.nbytes = 0

    def keys(self) -> list[str]:
        """The keys held, least recently used first."""
        with self._lock:
            return list(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def _discard(self, key: str) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self.nbytes -= item[1]
