"""Storage backends, chosen by the target given to `ReflectiveMemory.open`."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidInputError
from .base import Store
from .sqlite import SQLiteStore

__all__ = ["Store", "SQLiteStore", "default_location", "open_store"]


def default_location() -> str:
    """Where a memory lives when no target is given: `$RMM_DB`, else a SQLite file in the
    user's data folder (`$XDG_DATA_HOME/rmm/memory.sqlite`, `~/.local/share` by default)."""
    if os.environ.get("RMM_DB"):
        return os.environ["RMM_DB"]
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                            "share")
    return os.path.join(data, "rmm", "memory.sqlite")


def open_store(target: str | Path, *, synchronous: str = "NORMAL") -> Store:
    """`:memory:`, a file path or `sqlite:///path` → SQLite; `postgresql://…` → PostgreSQL.

    `synchronous` is SQLite's durability level (`SYNCHRONOUS`); a PostgreSQL server's commits
    are durable by its own settings."""
    if isinstance(target, Path):
        return SQLiteStore(target, synchronous=synchronous)
    if not isinstance(target, str) or not target.strip():
        raise InvalidInputError(f"open() needs a path or database URL, got {target!r}")
    if target.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        from .postgres import PostgresStore

        return PostgresStore(target)
    if target.startswith("sqlite:///"):
        return SQLiteStore(target[len("sqlite:///"):] or ":memory:", synchronous=synchronous)
    if "://" in target:
        raise InvalidInputError(
            f"unsupported database URL {target.split('://')[0]}://; "
            "use a file path, sqlite:///path or postgresql://")
    return SQLiteStore(Path(target).expanduser(), synchronous=synchronous)
