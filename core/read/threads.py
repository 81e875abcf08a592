"""A search's threads: one BLAS thread for its small matrix-vector products (on a busy
machine the hand-offs between BLAS's threads cost several times the products themselves:
five products of 2,300 x 384 under load took 8.7 ms with OpenBLAS's two threads, 2.1 ms
with one), and a small pool on which its approximate-index lookup runs beside BM25."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")

_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


@cache
def _controller() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread() -> AbstractContextManager:
    """Limit BLAS to one thread within the block (the process's own limit after it)."""
    return _controller().limit(limits=1, user_api="blas")


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
