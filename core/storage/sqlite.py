"""The embedded default store: one SQLite file (or `:memory:`), WAL, safe across processes."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError, StorageError
from ..types import new_memory_id
from .base import SCHEMA_VERSION
from .sql import APP_ID, SQLStore, read_schema_version, rename_legacy_user_state

__all__ = ["SYNCHRONOUS", "SQLiteStore", "new_memory_id"]

SYNCHRONOUS = ("NORMAL", "FULL")
"""SQLite `synchronous` levels offered (WAL mode): a commit under NORMAL survives a crash of
the process, under FULL a power loss too (each commit waits for the disk)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, status TEXT NOT NULL,
    started_at TEXT, last_activity REAL NOT NULL, n_turns INTEGER NOT NULL,
    reflected INTEGER NOT NULL DEFAULT 0, reflect_failures INTEGER NOT NULL DEFAULT 0,
    reflect_error TEXT, reflect_retry_at REAL, metadata TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (user_id, session_id));
CREATE TABLE IF NOT EXISTS turns (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL,
    turn_id TEXT NOT NULL, speaker TEXT NOT NULL, text TEXT NOT NULL, ts TEXT,
    PRIMARY KEY (user_id, turn_id));
CREATE INDEX IF NOT EXISTS turns_by_session ON turns (user_id, session_id, seq);
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, text TEXT NOT NULL, key TEXT NOT NULL,
    refs TEXT NOT NULL, speakers TEXT NOT NULL, session_ids TEXT NOT NULL,
    occurred_at TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    attrs TEXT NOT NULL, seq INTEGER NOT NULL, metadata TEXT NOT NULL DEFAULT '{}',
    validity TEXT NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS memories_by_user ON memories (user_id, seq);
CREATE INDEX IF NOT EXISTS memories_by_user_id ON memories (user_id, id);
CREATE TABLE IF NOT EXISTS memory_vectors (
    memory_id TEXT NOT NULL, user_id TEXT NOT NULL, idx INTEGER NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY (memory_id, idx));
CREATE INDEX IF NOT EXISTS vectors_by_user ON memory_vectors (user_id, memory_id, idx);
CREATE TABLE IF NOT EXISTS memory_versions (
    memory_id TEXT NOT NULL, user_id TEXT NOT NULL, version INTEGER NOT NULL,
    text TEXT NOT NULL, refs TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL,
    source TEXT, PRIMARY KEY (memory_id, version));
CREATE INDEX IF NOT EXISTS versions_by_user ON memory_versions (user_id, memory_id, version);
CREATE TABLE IF NOT EXISTS user_state (user_id TEXT PRIMARY KEY, generation INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS named_state (
    name TEXT PRIMARY KEY, version INTEGER NOT NULL, blob BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS state_deltas (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, blob BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS state_deltas_by_name ON state_deltas (name, seq);
CREATE TABLE IF NOT EXISTS feedback_log (
    result_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS llm_usage (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, calls INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
    failures INTEGER NOT NULL, PRIMARY KEY (user_id, session_id));
CREATE TABLE IF NOT EXISTS memory_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, generation INTEGER NOT NULL,
    memory_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS memory_changes_by_user ON memory_changes (user_id, seq);
CREATE INDEX IF NOT EXISTS memory_changes_by_generation ON memory_changes (user_id, generation);
"""

_ADDED_COLUMNS = {
    "sessions": ("reflect_failures INTEGER NOT NULL DEFAULT 0", "reflect_error TEXT",
                 "reflect_retry_at REAL", "metadata TEXT NOT NULL DEFAULT '{}'"),
    "memories": ("metadata TEXT NOT NULL DEFAULT '{}'", "validity TEXT NOT NULL DEFAULT '{}'"),
}
"""Columns added since schema 1: a session's failed reflections (schema 4), the caller's
metadata on sessions and memories (schema 5), a memory's supersession fields (schema 7).
The memory change log (schema 6) is a new table, which the schema script creates."""


class _Tx:
    """`Tx` over a sqlite3 connection (it already speaks `?`)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        return self.conn.execute(sql, params).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.conn.execute(sql, params).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, params).rowcount

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def lock(self, key: str) -> None:
        """Nothing to take: a SQLite write transaction already excludes every other writer."""


class SQLiteStore(SQLStore):
    """One connection guarded by a lock; WAL and a busy timeout for other processes.

    Deleted content is overwritten (`secure_delete`), and `forget` truncates the WAL, so a
    forgotten user's text stays in neither file. A file that this process cannot write (or
    whose folder it cannot write, so no WAL can be made) opens read-only.
    """

    def __init__(self, path: str | Path = ":memory:", *, timeout: float = 60.0,
                 synchronous: str = "NORMAL") -> None:
        if synchronous not in SYNCHRONOUS:
            raise InvalidInputError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}, "
                                    f"got {synchronous!r}")
        self.path = str(path)
        self.url = self.path if self.path == ":memory:" else f"sqlite:///{self.path}"
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise StorageError(f"cannot open {self.path}: folder {parent} does not exist")
        self.read_only = self.path != ":memory:" and not _writable(Path(self.path))
        if self.read_only and not Path(self.path).expanduser().exists():
            raise StorageError(f"cannot create {self.path}: its folder is not writable")
        self._lock = threading.RLock()
        try:
            self._conn = (_connect_read_only(self.path, timeout) if self.read_only else
                          sqlite3.connect(self.path, timeout=timeout, isolation_level=None,
                                          check_same_thread=False))
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            if self.path != ":memory:" and not self.read_only:
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            self._conn.execute("PRAGMA secure_delete = ON")
            self._init_schema()
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"{self.path} is not a usable rmm database: {exc}") from exc

    # plumbing ---------------------------------------------------------------------------
    @contextmanager
    def _tx(self, lock: str = "") -> Iterator[_Tx]:
        """A write transaction taken up front (BEGIN IMMEDIATE), so it cannot deadlock."""
        if self.read_only:
            raise StorageError(f"{self.path} is open read-only (this process cannot write the "
                               "file or its folder): nothing written")
        with self._lock, _storage_errors(self.path):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield _Tx(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    @contextmanager
    def _snapshot(self) -> Iterator[_Tx]:
        with self._lock, _storage_errors(self.path):
            self._conn.execute("BEGIN")
            try:
                yield _Tx(self._conn)
            finally:
                self._conn.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock, _storage_errors(self.path):
            return self._conn.execute(sql, params).fetchall()

    def _vec_param(self, vector: np.ndarray) -> bytes:
        return vector.astype(np.float32).tobytes()

    def _vec_stack(self, values: list[bytes]) -> np.ndarray:
        return np.frombuffer(b"".join(values), dtype=np.float32).reshape(len(values), -1)

    def _init_schema(self) -> None:
        with self._lock:
            tables = {r[0] for r in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "meta" not in tables:
                raise StorageError(f"{self.path} is a SQLite database of another application")
            if self.read_only:
                self._check_read_only_schema()
                return
            with self._tx() as db:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.run(statement)
                row = db.one("SELECT value FROM meta WHERE key = 'app'")
                if row is None:
                    db.run("INSERT INTO meta VALUES ('app', ?)", (APP_ID,))
                    db.run("INSERT INTO meta VALUES ('schema_version', ?)",
                           (str(SCHEMA_VERSION),))
                elif row[0] != APP_ID:
                    raise StorageError(f"{self.path} belongs to another application ({row[0]})")
                version = read_schema_version(_meta(db, "schema_version"), self.path)
                if version > SCHEMA_VERSION:
                    raise StorageError(
                        f"{self.path} has schema version {version}; this rmm_core knows up "
                        f"to {SCHEMA_VERSION}: upgrade the package")
                if version < SCHEMA_VERSION:  # the schema above created what was missing
                    if version < 3:
                        rename_legacy_user_state(db)
                    for table, columns in _ADDED_COLUMNS.items():
                        have = {r[1] for r in db.all(f"PRAGMA table_info({table})")}
                        for column in columns:
                            if column.split()[0] not in have:
                                db.run(f"ALTER TABLE {table} ADD COLUMN {column}")
                    db.run("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                           (str(SCHEMA_VERSION),))

    def _check_read_only_schema(self) -> None:
        """A read-only file is used as it is: it must be this application's, at this schema."""
        db = _Tx(self._conn)
        if _meta(db, "app") != APP_ID:
            raise StorageError(f"{self.path} is not an rmm database")
        version = read_schema_version(_meta(db, "schema_version"), self.path)
        if version != SCHEMA_VERSION:
            raise StorageError(f"{self.path} has schema version {version} and is read-only; "
                               f"this rmm_core reads version {SCHEMA_VERSION}: open it once "
                               "with write access to upgrade it")

    def forget(self, user_id: str) -> None:
        super().forget(user_id)
        self._truncate_wal()

    def _truncate_wal(self) -> None:
        """Copy the WAL into the file and empty it: its frames still hold deleted text."""
        if self.path != ":memory:":
            with self._lock, _storage_errors(self.path):
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _meta(db: _Tx, key: str) -> str | None:
    row = db.one("SELECT value FROM meta WHERE key = ?", (key,))
    return row[0] if row else None


def _writable(path: Path) -> bool:
    """Whether this process can write the database: the file (if any) and its folder, where
    SQLite makes its -wal and -shm files."""
    path = path.expanduser()
    return os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))


def _connect_read_only(path: str, timeout: float) -> sqlite3.Connection:
    """A read-only connection; `immutable` where not even the -shm file can be made (a WAL
    database in a read-only folder), which tells SQLite that no one writes the file."""
    uri = Path(path).expanduser().resolve().as_uri()
    options = {"timeout": timeout, "isolation_level": None, "check_same_thread": False}
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, **options)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
    return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, **options)


@contextmanager
def _storage_errors(path: str) -> Iterator[None]:
    """Driver failures (disk full, file damaged, closed handle) surface as `StorageError`."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StorageError(f"{path}: {exc}") from exc
