"""Two connections that only in-database searches use, so that a search runs its two
independent shortlist statements at once and never waits for the store's writes on its main
connection."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import wait
from contextlib import contextmanager
from typing import Any, TypeVar

from ...background import in_background
from .tx import PgTx

A = TypeVar("A")
B = TypeVar("B")

SEARCH_SETTINGS = ("SET enable_seqscan = off",)
"""Session settings of a search connection: the lexical shortlist's narrow queries are what
the GIN index is for, and the planner's estimates for them often choose a slower scan of
every row."""


class SearchPair:
    """Two autocommit connections (opened by `connect`, opened again after a search failed);
    one search at a time uses them."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._conns: list[Any] = [None, None]
        self._lock = threading.Lock()

    @contextmanager
    def held(self) -> Iterator[tuple[PgTx, PgTx]]:
        """Both connections, as binary cursors, for one search."""
        with self._lock:
            for i, conn in enumerate(self._conns):
                if conn is None:
                    conn = self._conns[i] = self._connect()
                    for setting in SEARCH_SETTINGS:
                        conn.execute(setting)
            try:
                with (self._conns[0].cursor(binary=True) as a,
                      self._conns[1].cursor(binary=True) as b):
                    yield PgTx(a), PgTx(b)
            except BaseException:  # either link may be the broken one: the next search
                self._drop()  # opens both again
                raise

    def at_once(self, pair: tuple[PgTx, PgTx], first: Callable[[PgTx], A],
                second: Callable[[PgTx], B]) -> tuple[A, B]:
        """`first` on the pair's first connection while `second` runs on its second; each
        statement sees the rows committed before it started (its own snapshot)."""
        future = in_background(second, pair[1])
        try:
            out = first(pair[0])
        finally:
            wait([future])  # the second connection is free again before the pair is
        return out, future.result()

    def _drop(self) -> None:
        for conn in self._conns:
            if conn is not None:
                conn.close()
        self._conns = [None, None]

    def close(self) -> None:
        """Close both connections (after a search under way)."""
        with self._lock:
            self._drop()
