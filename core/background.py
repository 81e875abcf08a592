"""A process-wide pool of worker threads on which a search runs one blocking call beside its
own work: the approximate-index lookup (faiss frees the GIL) while BM25 is scored, or one
of PostgreSQL's two shortlist statements while the other runs."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def in_background(call: Callable[..., T], *args: Any) -> Future[T]:
    """`call(*args)` on a worker of the process's pool (as many as cores; made again in a
    forked child, where the parent's workers do not exist), once the worker has started.

    A worker waiting for the GIL gets it only when the busy caller drops it, after the
    switch interval (5 ms); waiting for the start hands it over at once, and the call
    (faiss's search) frees it again.
    """
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(os.cpu_count() or 2,
                                                     thread_name_prefix="rmm-search"))
        pool = _pool[1]
    started = threading.Event()

    def run() -> T:
        started.set()
        return call(*args)

    future = pool.submit(run)
    started.wait()
    return future
