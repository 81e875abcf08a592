"""Storage backends, chosen by the target given to `ReflectiveMemory.open`."""

from __future__ import annotations

from pathlib import Path

from ..errors import InvalidInputError
from .base import Store
from .sqlite import SQLiteStore

__all__ = ["Store", "SQLiteStore", "open_store"]


def open_store(target: str | Path) -> Store:
    """`:memory:`, a file path or `sqlite:///path` → SQLite; `postgresql://…` → PostgreSQL."""
    if isinstance(target, Path):
        return SQLiteStore(target)
    if not isinstance(target, str) or not target.strip():
        raise InvalidInputError(f"open() needs a path or database URL, got {target!r}")
    if target.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        from .postgres import PostgresStore

        return PostgresStore(target)
    if target.startswith("sqlite:///"):
        return SQLiteStore(target[len("sqlite:///"):] or ":memory:")
    if "://" in target:
        raise InvalidInputError(
            f"unsupported database URL {target.split('://')[0]}://; "
            "use a file path, sqlite:///path or postgresql://")
    return SQLiteStore(Path(target).expanduser())
