"""The SQLite store's schema: numbered steps from version 1 (`sql.schema` runs them on open).

Stores written before these steps existed were created by one script of every table at its
version's shape; the steps leave such a store as they leave one they built themselves."""

from __future__ import annotations

from collections.abc import Callable

from .base import SCHEMA_VERSION
from .sql import Tx, rename_legacy_user_state
from .sql.schema import Steps


def add_columns(table: str, *columns: str) -> Callable[[Tx], None]:
    """A step adding each column (its SQL definition) to `table` where it is missing: SQLite
    has no `ADD COLUMN IF NOT EXISTS`."""

    def add(db: Tx) -> None:
        have = {r[1] for r in db.all(f"PRAGMA table_info({table})")}
        for column in columns:
            if column.split()[0] not in have:
                db.run(f"ALTER TABLE {table} ADD COLUMN {column}")

    return add


MIGRATIONS: Steps = {
    1: ["""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, status TEXT NOT NULL,
    started_at TEXT, last_activity REAL NOT NULL, n_turns INTEGER NOT NULL,
    reflected INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (user_id, session_id));
CREATE TABLE IF NOT EXISTS turns (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL,
    turn_id TEXT NOT NULL, speaker TEXT NOT NULL, text TEXT NOT NULL, ts TEXT,
    PRIMARY KEY (user_id, turn_id));
CREATE INDEX IF NOT EXISTS turns_by_session ON turns (user_id, session_id, seq);
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, text TEXT NOT NULL, key TEXT NOT NULL,
    refs TEXT NOT NULL, speakers TEXT NOT NULL, session_ids TEXT NOT NULL,
    occurred_at TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    attrs TEXT NOT NULL, seq INTEGER NOT NULL);
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
CREATE TABLE IF NOT EXISTS feedback_log (
    result_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS llm_usage (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, calls INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
    failures INTEGER NOT NULL, PRIMARY KEY (user_id, session_id))
"""],
    # the reranker's logged steps; the earliest version 1 files lack the by-id index
    2: ["""
CREATE TABLE IF NOT EXISTS state_deltas (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, blob BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS state_deltas_by_name ON state_deltas (name, seq);
CREATE INDEX IF NOT EXISTS memories_by_user_id ON memories (user_id, id)
"""],
    3: [rename_legacy_user_state],
    4: [add_columns("sessions", "reflect_failures INTEGER NOT NULL DEFAULT 0",
                    "reflect_error TEXT", "reflect_retry_at REAL")],
    5: [add_columns("sessions", "metadata TEXT NOT NULL DEFAULT '{}'"),
        add_columns("memories", "metadata TEXT NOT NULL DEFAULT '{}'")],
    6: ["""
CREATE TABLE IF NOT EXISTS memory_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, generation INTEGER NOT NULL,
    memory_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS memory_changes_by_user ON memory_changes (user_id, seq);
CREATE INDEX IF NOT EXISTS memory_changes_by_generation ON memory_changes (user_id, generation)
"""],
    7: [add_columns("memories", "validity TEXT NOT NULL DEFAULT '{}'")],
}
"""Schema version → what brings the previous version to it: the first release's tables, the
reranker's logged steps (2), per-user state under hashed names (3), a session's failed
reflections (4), the caller's metadata on sessions and memories (5), the memory change log
(6), a memory's supersession fields (7)."""

assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))
