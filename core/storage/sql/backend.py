"""What each SQL backend supplies (transactions, vectors, text) and what they share at open.

Statements use `?` placeholders and SQL that SQLite and PostgreSQL both accept; a backend
only says how to run them (`_tx`, `_read`, `_snapshot`) and how vectors and text travel.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from ...errors import StorageError
from ..base import legacy_state_renames

APP_ID = "rmm_core"


class Tx(Protocol):
    """One open transaction: run a statement, fetch rows, count changed rows."""

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple | None: ...

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...

    def run(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    def lock(self, key: str) -> None:
        """Also take the write lock `key` until the transaction ends (see `SQLStore._tx`)."""


def read_schema_version(value: Any, where: str) -> int:
    """The schema version stored in `meta`, checked: a positive integer, else `StorageError`
    (a damaged or hand-edited row must not pass for an old schema and be "migrated")."""
    if isinstance(value, str) and value.isdecimal() and int(value) > 0:
        return int(value)
    raise StorageError(f"{where} has a damaged schema version ({value!r} in its meta table); "
                       "restore it from a backup")


def rename_legacy_user_state(db: Tx) -> None:
    """The schema 3 data migration: per-user named state (and its logged steps) moves from
    names holding the user id to names under its hash (`legacy_state_renames`)."""
    names = db.all("SELECT name FROM named_state UNION SELECT DISTINCT name FROM state_deltas")
    for old, new in legacy_state_renames(n for (n,) in names):
        db.run("UPDATE named_state SET name = ? WHERE name = ?", (new, old))
        db.run("UPDATE state_deltas SET name = ? WHERE name = ?", (new, old))


def _chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _marks(n: int) -> str:
    return ",".join("?" * n)


class SQLBackend(ABC):
    """The backend interface every SQL part of the store is written over."""

    @abstractmethod
    def _tx(self, lock: str) -> AbstractContextManager[Tx]:
        """A write transaction serialised with every other one holding the same `lock`."""

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[Tx]:
        """A read-only transaction that sees one consistent state."""

    @abstractmethod
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...

    @abstractmethod
    def _vec_param(self, vector: np.ndarray) -> Any:
        """One vector as the backend stores it."""

    @abstractmethod
    def _vec_stack(self, values: list[Any]) -> np.ndarray:
        """Stored vectors (as read back) into one float32 matrix."""

    def _enc(self, text: str) -> str:
        """Text as stored (PostgreSQL cannot hold NUL); identity where the database can."""
        return text

    def _dec(self, text: str) -> str:
        return text

    _VECTOR_DIM_SQL = "length(vec) / 4"
    """SQL for the dimension of a stored vector `vec`."""
