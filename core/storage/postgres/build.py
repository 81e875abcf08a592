"""Builds the search indexes of in-database search without blocking writers: `CREATE INDEX
CONCURRENTLY` on an autocommit connection, one process at a time (advisory lock), a failed
build's INVALID index dropped and built again; in the background, on a daemon thread."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .tx import lock_key

log = logging.getLogger(__name__)

TEXT_SEARCH = "english"
"""PostgreSQL text search configuration of the keys' lexemes (stems English)."""
LEXEMES = "m.lexemes"
"""A memory's lexemes: a column the store's trigger fills on write (`schema`), so that a
search reads them instead of computing them again for every row it touches."""
LEXEME_INDEX = "memories_by_lexemes"
LEGACY_INDEX = "memories_lexemes"
"""The previous release's GIN index over the lexemes' expression, dropped once the column's
index is valid."""
BACKFILL = 5_000
"""Memories whose lexemes one statement of the build fills (rows written before the column)."""
BUILD_LOCK = lock_key("rmm-search-build")
"""Held (per session) by the process building the search indexes."""
POLL_S = 0.2
"""How often a process waiting for another's build tries the lock again (a blocking wait
would hold a snapshot that the other's concurrent build waits for in turn)."""


def _vector_index(dim: int) -> str:
    return f"memory_vectors_hnsw_{int(dim)}"


def _ddl(dim: int) -> dict[str, str]:
    """Index name → its concurrent creation."""
    return {
        LEXEME_INDEX: f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {LEXEME_INDEX} ON memories "
                      "USING gin (lexemes)",
        _vector_index(dim): f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {_vector_index(dim)} ON "
                           f"memory_vectors USING hnsw ((vec::vector({int(dim)})) "
                           "vector_ip_ops) WHERE idx = 0",
    }


def _valid(conn: Any, schema: str, names: list[str]) -> dict[str, bool]:
    """Each present index of `names` → whether queries may use it (a concurrent build
    under way or failed leaves it invalid)."""
    return dict(conn.execute(
        "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = "
        "i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
        "AND c.relname = ANY(%s)", (schema, names)).fetchall())


def search_ready(conn: Any, schema: str, dim: int) -> bool:
    """Whether both search indexes exist and are valid."""
    names = list(_ddl(dim))
    return sum(_valid(conn, schema, names).values()) == len(names)


def build(conn: Any, schema: str, dim: int, stop: threading.Event | None = None) -> bool:
    """Fill the lexemes of rows written before their column, create the missing search
    indexes on autocommit `conn` (search_path set), rebuilding invalid ones, then drop the
    full-text index and column of earlier releases. Waits while another process builds;
    False: `stop` was set meanwhile."""
    stop = stop or threading.Event()
    while not conn.execute("SELECT pg_try_advisory_lock(%s)", (BUILD_LOCK,)).fetchone()[0]:
        if stop.wait(POLL_S):
            return False
    try:
        conn.execute("SET maintenance_work_mem = '256MB'")
        if not _backfill(conn, stop):
            return False
        ddl = _ddl(dim)
        valid = _valid(conn, schema, list(ddl))
        for name, create in ddl.items():
            if stop.is_set():
                return False
            if valid.get(name) is False:  # left by a build that failed or was cancelled
                conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
            if not valid.get(name):
                conn.execute(create)
        conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {LEGACY_INDEX}")
        if conn.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = %s "
                        "AND table_name = 'memories' AND column_name = 'tsv'",
                        (schema,)).fetchone():
            conn.execute("ALTER TABLE memories DROP COLUMN IF EXISTS tsv")
        return True
    finally:
        conn.execute("RESET maintenance_work_mem")
        conn.execute("SELECT pg_advisory_unlock(%s)", (BUILD_LOCK,))


def _backfill(conn: Any, stop: threading.Event) -> bool:
    """Fill the lexemes of the rows written before their column existed, `BACKFILL` rows a
    statement in key order (short transactions: writers wait for no more than one); False:
    `stop` was set meanwhile."""
    last = ""
    while not stop.is_set():
        done = conn.execute(
            f"UPDATE memories m SET lexemes = to_tsvector('{TEXT_SEARCH}', m.key) WHERE m.id IN "
            "(SELECT id FROM memories WHERE id > %s AND lexemes IS NULL ORDER BY id LIMIT %s) "
            "RETURNING m.id", (last, BACKFILL)).fetchall()
        if not done:
            return True
        last = max(r[0] for r in done)
    return False


class Builder:
    """At most one background build per store: a daemon thread on its own connection, which
    `stop` cancels (a cancelled build's invalid index is rebuilt by the next)."""

    RETRY_S = 300.0
    """After a failed build, searches stay in process this long before another is tried."""

    def __init__(self, connect: Callable[[], Any], schema: str) -> None:
        self._connect = connect
        self.schema = schema
        self._thread: threading.Thread | None = None
        self._conn: Any = None
        self._stop = threading.Event()
        self._failed_at = -float("inf")

    @property
    def busy(self) -> bool:
        """Whether a build is under way, or failed too recently to try again."""
        return ((self._thread is not None and self._thread.is_alive())
                or time.monotonic() - self._failed_at < self.RETRY_S)

    def start(self, dim: int) -> None:
        if self.busy or self._stop.is_set():
            return
        self._thread = threading.Thread(target=self._run, args=(dim,), daemon=True,
                                        name="rmm-search-index-build")
        self._thread.start()

    def _run(self, dim: int) -> None:
        try:
            with self._connect() as conn:
                self._conn = conn
                t0 = time.perf_counter()
                if build(conn, self.schema, dim, self._stop):
                    log.info("search indexes built in %.1f s", time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001 - a failed build must not reach a search
            if not self._stop.is_set():
                self._failed_at = time.monotonic()
                log.warning("building the search indexes failed; searches stay in process "
                            "(retried in %.0f s): %s", self.RETRY_S, exc)
        finally:
            self._conn = None

    def stop(self) -> None:
        """Cancel a build under way and wait for its thread."""
        self._stop.set()
        conn = self._conn
        if conn is not None:
            try:
                conn.cancel()
            except Exception:  # noqa: BLE001 - already finished or closed
                pass
        if self._thread is not None:
            self._thread.join()
