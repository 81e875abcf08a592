"""A thread-safe least-recently-used map bounded by bytes (per-user reranker weights)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")


class ByteLRU(Generic[V]):
    """Values with their sizes; putting one evicts the least recently used until the total
    fits `max_bytes` again. The value just put always stays, even when it alone is larger."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._items: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: str, value: V, size: int) -> list[str]:
        """Store `value` as the most recently used; returns the keys evicted to make room."""
        with self._lock:
            self._discard(key)
            self._items[key] = (value, size)
            self.nbytes += size
            evicted = []
            while self.nbytes > self.max_bytes and len(self._items) > 1:
                oldest = next(iter(self._items))
                self._discard(oldest)
                evicted.append(oldest)
            return evicted

    def pop(self, key: str) -> None:
        with self._lock:
            self._discard(key)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.nbytes = 0

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def _discard(self, key: str) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self.nbytes -= item[1]
