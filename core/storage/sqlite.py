"""The embedded default store: one SQLite file (or `:memory:`), WAL, safe across processes."""

from __future__ import annotations

import os
import sqlite3
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError, ResidueWarning, StorageError
from ..types import new_memory_id
from .base import SCHEMA_VERSION
from .sql import SQLStore
from .sql.schema import checked_version, read_meta, upgrade
from .sqlite_schema import MIGRATIONS

__all__ = ["SYNCHRONOUS", "SQLiteStore", "new_memory_id"]

SYNCHRONOUS = ("NORMAL", "FULL")
"""SQLite `synchronous` levels offered (WAL mode): a commit under NORMAL survives a crash of
the process, under FULL a power loss too (each commit waits for the disk)."""


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

    Deleted content is overwritten (`secure_delete`), and `forget` and `delete_memory`
    truncate the WAL, so a forgotten user's or deleted memory's text stays in no file of the
    store. A file that this process cannot write (or whose folder it cannot write, so no WAL
    can be made) opens read-only.
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
            if self._conn.execute("PRAGMA secure_delete = ON").fetchone() != (1,):
                raise StorageError(f"{self.path}: this SQLite library cannot overwrite deleted "
                                   "content (PRAGMA secure_delete); deleted text would stay")
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
        """Create the schema, or bring an older one to this version, in one transaction; a
        read-only file is used as it is: it must be this application's, at this schema."""
        foreign = f"{self.path} is a SQLite database of another application"
        with self._lock:
            if self.read_only:
                db = _Tx(self._conn)
                version = checked_version(read_meta(db, _tables(db), self.path, foreign),
                                          self.path)
                if version != SCHEMA_VERSION:
                    raise StorageError(
                        f"{self.path} has schema version {version} and is read-only; this "
                        f"rmm_core reads version {SCHEMA_VERSION}: open it once with write "
                        "access to upgrade it")
                return
            with self._tx() as db:
                upgrade(db, MIGRATIONS, _tables(db), where=self.path, foreign=foreign)

    def forget(self, user_id: str) -> None:
        super().forget(user_id)
        self._truncate_wal()

    def delete_memory(self, user_id: str, memory_id: str) -> None:
        super().delete_memory(user_id, memory_id)
        self._truncate_wal()

    def _truncate_wal(self) -> None:
        """Copy the WAL into the file and empty it: its frames still hold deleted text. A
        reader of an older snapshot (another process) past the busy timeout keeps it: warn."""
        if self.path == ":memory:":
            return
        with self._lock, _storage_errors(self.path):
            busy = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            warnings.warn(f"{self.path}: another connection is reading an older snapshot, so "
                          "the -wal file still holds the deleted text; it is emptied at the "
                          "next delete or forget, or when the last connection closes",
                          ResidueWarning, stacklevel=3)

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _tables(db: _Tx) -> set[str]:
    return {r[0] for r in db.all("SELECT name FROM sqlite_master WHERE type = 'table'")}


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
