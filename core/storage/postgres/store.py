"""The server store: PostgreSQL with pgvector, shared by many application processes.

Tables live in their own schema (`rmm` unless the URL says `?rmm_schema=name`), created and
migrated by the library under an advisory lock (`schema`). Writes of one user are
serialised by an advisory transaction lock, so several servers can append, reflect and
forget at once. In-database search is the `search` mixin.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from ...errors import InvalidInputError, MissingDependencyError, StorageError
from ..redact import redact
from ..sql import SQLStore
from .build import Builder
from .pair import SearchPair
from .schema import migrate
from .search import PostgresSearch
from .tx import PgTx

# PostgreSQL text cannot hold NUL: NUL and the escape character itself are escaped
_ESC = "\ue000"
_ESCAPES = {_ESC: _ESC + "1", "\x00": _ESC + "0"}
_UNESCAPE = re.compile(_ESC + "(.)", re.S)
_UNESCAPES = {"1": _ESC, "0": "\x00"}


def _split_url(url: str) -> tuple[str, str]:
    """Strip our own `rmm_schema` parameter (libpq would reject it); normalise the scheme."""
    try:
        parts = urlsplit(url.replace("postgresql+psycopg://", "postgresql://", 1))
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket: postgresql://[::1
        raise InvalidInputError(f"bad PostgreSQL URL {redact(url, url)}: {exc}") from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "rmm_schema"), "rmm")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
        raise StorageError(f"rmm_schema must be a lower-case SQL identifier, got {schema!r}")
    kept = urlencode([(k, v) for k, v in query if k != "rmm_schema"])
    return urlunsplit(parts._replace(query=kept)), schema


class PostgresStore(PostgresSearch, SQLStore):
    """One psycopg connection per store, guarded by a lock, and two more that only in-database
    searches use (`pair`); each reconnects after a broken link."""

    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        try:
            import pgvector.psycopg  # noqa: F401
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise MissingDependencyError(exc.name or "psycopg", "postgres") from exc
        self.url = url
        self._dsn, self.schema = _split_url(url)
        self._timeout = connect_timeout
        self._lock = threading.RLock()
        self._conn: Any = None
        self._vector_oid = 0
        self._builder = Builder(self._own_connection, self.schema)
        self._searching = SearchPair(self._search_connection)
        with self._lock, self._errors():
            self._connect(create=True)

    # connection ---------------------------------------------------------------------------
    def _connect(self, *, create: bool = False) -> None:
        import psycopg

        try:
            conn = psycopg.connect(self._dsn, autocommit=True,
                                   connect_timeout=max(1, int(self._timeout)))
        except psycopg.Error as exc:
            raise self._failure("cannot reach PostgreSQL at", exc)  # noqa: B904 - it sets the cause
        self._conn = conn
        if create:
            migrate(conn, self.schema, self.url)
        conn.execute(f"SET search_path TO {self.schema}, public")
        self._register_vector(conn)

    def _own_connection(self) -> Any:
        """A new autocommit connection on the store's schema (the background index build's)."""
        import psycopg

        conn = psycopg.connect(self._dsn, autocommit=True,
                               connect_timeout=max(1, int(self._timeout)))
        conn.execute(f"SET search_path TO {self.schema}, public")
        return conn

    def _search_connection(self) -> Any:
        """A new connection for in-database searches: vectors sent and read as `_conn`'s."""
        conn = self._own_connection()
        self._register_vector(conn)
        return conn

    def _register_vector(self, conn: Any) -> None:
        from pgvector.psycopg import register_vector
        from psycopg.adapt import Loader
        from psycopg.pq import Format

        register_vector(conn)
        oid = conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0]

        class RawVector(Loader):  # the wire format as is; `_vec_stack` decodes it in bulk
            format = Format.BINARY

            def load(self, data: Any) -> bytes:
                return bytes(data)

        conn.adapters.register_loader(oid, RawVector)
        self._vector_oid = oid

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Driver failures surface as `StorageError`; a broken link is reopened next time."""
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            raise self._failure("PostgreSQL at", exc)  # noqa: B904 - it sets the cause

    def _failure(self, prefix: str, exc: Exception) -> StorageError:
        """A driver failure as `StorageError`, passwords redacted (libpq echoes a malformed
        conninfo token); the driver's exception is its cause only when its text holds none."""
        text = str(exc).strip()
        clean = redact(text, self.url)
        error = StorageError(f"{prefix} {redact(self.url, self.url)}: {clean}")
        error.__cause__ = exc if clean == text else None
        error.__suppress_context__ = True
        return error

    def _live(self) -> Any:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._connect()
        return self._conn

    # backend interface ----------------------------------------------------------------------
    @contextmanager
    def _tx(self, lock: str) -> Iterator[PgTx]:
        with self._lock, self._errors():
            conn = self._live()
            with conn.transaction(), conn.cursor(binary=True) as cur:
                tx = PgTx(cur)
                tx.lock(lock)
                yield tx

    @contextmanager
    def _snapshot(self) -> Iterator[PgTx]:
        with self._lock, self._errors():
            conn = self._live()
            with conn.transaction(), conn.cursor(binary=True) as cur:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield PgTx(cur)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock, self._errors():
            with self._live().cursor(binary=True) as cur:
                return PgTx(cur).all(sql, params)

    _VECTOR_DIM_SQL = "vector_dims(vec)"

    def _vec_param(self, vector: np.ndarray) -> np.ndarray:
        return vector

    def _vec_stack(self, values: list[bytes]) -> np.ndarray:
        # binary vector: uint16 dim, uint16 unused, then big-endian float32s
        dim = int.from_bytes(values[0][:2], "big")
        raw = b"".join(v[4:] for v in values)
        return np.frombuffer(raw, dtype=">f4").astype(np.float32).reshape(len(values), dim)

    def _enc(self, text: str) -> str:
        if "\x00" in text or _ESC in text:
            return text.replace(_ESC, _ESCAPES[_ESC]).replace("\x00", _ESCAPES["\x00"])
        return text

    def _dec(self, text: str) -> str:
        if _ESC in text:
            return _UNESCAPE.sub(lambda m: _UNESCAPES[m.group(1)], text)
        return text

    def close(self) -> None:
        """Cancel a background index build under way, then close the connections."""
        self._builder.stop()
        self._searching.close()
        with self._lock:
            if self._conn is not None:
                self._conn.close()

