"""One BLAS thread for a search's small matrix-vector products: on a busy machine the hand-
offs between BLAS's threads cost several times the products themselves (five products of
2,300 x 384 under load: 8.7 ms with OpenBLAS's two threads, 2.1 ms with one)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from functools import cache
from typing import Any


@cache
def _controller() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread() -> AbstractContextManager:
    """Limit BLAS to one thread within the block (the process's own limit after it)."""
    return _controller().limit(limits=1, user_api="blas")
