"""Versioned schemas: the one runner that checks a store's application and schema version and
brings it to `SCHEMA_VERSION` with its backend's numbered steps, in the caller's transaction.

Each backend lists its steps (`Steps`): step N brings a store of version N - 1 to version N,
and a new store runs every step from 1. Steps are idempotent (`IF NOT EXISTS`, columns added
only where missing), so a store whose tables are ahead of its recorded version still opens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ...errors import StorageError
from ..base import SCHEMA_VERSION
from .backend import APP_ID, Tx, read_schema_version

Step = Sequence[str | Callable[[Tx], None]]
"""One version's changes, in order: SQL scripts (statements separated by `;`, none holding
one) and functions of the open transaction (data moves, or DDL a dialect cannot make
idempotent in SQL)."""
Steps = Mapping[int, Step]


def checked_version(meta: Mapping[str, str], where: str) -> int:
    """The schema version of a store whose `meta` table holds `meta` (empty: a new store, 0);
    `StorageError` when it is another application's, damaged, or newer than this package."""
    if not meta:
        return 0
    if meta.get("app") != APP_ID:
        raise StorageError(f"{where} belongs to another application ({meta.get('app')})")
    version = read_schema_version(meta.get("schema_version"), where)
    if version > SCHEMA_VERSION:
        raise StorageError(f"{where} has schema version {version}; this rmm_core knows up to "
                           f"{SCHEMA_VERSION}: upgrade the package")
    return version


def read_meta(db: Tx, tables: set[str], where: str, foreign: str) -> dict[str, str]:
    """The `meta` table's rows of a database holding `tables` (none: a new store);
    `StorageError(foreign)` when it holds tables but not ours."""
    if tables and "meta" not in tables:
        raise StorageError(foreign)
    if "meta" not in tables:
        return {}
    return dict(db.all("SELECT key, value FROM meta"))


def upgrade(db: Tx, steps: Steps, tables: set[str], *, where: str, foreign: str) -> int:
    """Check the store (`checked_version`) and run each step after its version, then record
    `SCHEMA_VERSION`; `tables` are the names the database holds now, `where` names the store
    in errors, `foreign` is the error for another application's tables. Returns the version
    found (0: new)."""
    version = checked_version(read_meta(db, tables, where, foreign), where)
    for number in range(version + 1, SCHEMA_VERSION + 1):
        for change in steps[number]:
            if callable(change):
                change(db)
                continue
            for statement in change.split(";"):
                if statement.strip():
                    db.run(statement)
    if version == 0:
        db.run("INSERT INTO meta (key, value) VALUES ('app', ?)", (APP_ID,))
    if version < SCHEMA_VERSION:
        db.run("INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) "
               "DO UPDATE SET value = excluded.value", (str(SCHEMA_VERSION),))
    return version
