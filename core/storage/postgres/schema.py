"""The PostgreSQL store's schema: versioned DDL and the migration run on open."""

from __future__ import annotations

from typing import Any

from ...errors import StorageError
from ..base import SCHEMA_VERSION
from ..redact import redact
from ..sql import rename_legacy_user_state
from ..sql.schema import Steps, upgrade
from .build import TEXT_SEARCH
from .tx import SCHEMA_LOCK, PgTx

MIGRATIONS: Steps = {
    1: ["""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    rowid BIGINT GENERATED ALWAYS AS IDENTITY,
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, status TEXT NOT NULL,
    started_at TEXT, last_activity DOUBLE PRECISION NOT NULL, n_turns INTEGER NOT NULL,
    reflected INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (user_id, session_id));
CREATE INDEX IF NOT EXISTS sessions_pending ON sessions (rowid) WHERE reflected < n_turns;
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
CREATE TABLE IF NOT EXISTS memory_vectors (
    memory_id TEXT NOT NULL, user_id TEXT NOT NULL, idx INTEGER NOT NULL, vec vector NOT NULL,
    PRIMARY KEY (memory_id, idx));
CREATE INDEX IF NOT EXISTS vectors_by_user ON memory_vectors (user_id);
CREATE TABLE IF NOT EXISTS memory_versions (
    memory_id TEXT NOT NULL, user_id TEXT NOT NULL, version INTEGER NOT NULL,
    text TEXT NOT NULL, refs TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL,
    source TEXT, PRIMARY KEY (memory_id, version));
CREATE INDEX IF NOT EXISTS versions_by_user ON memory_versions (user_id);
CREATE TABLE IF NOT EXISTS user_state (user_id TEXT PRIMARY KEY, generation BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS named_state (
    name TEXT PRIMARY KEY, version INTEGER NOT NULL, blob BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS feedback_log (
    result_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, at DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS feedback_by_user ON feedback_log (user_id);
CREATE TABLE IF NOT EXISTS llm_usage (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, calls BIGINT NOT NULL,
    prompt_tokens BIGINT NOT NULL, completion_tokens BIGINT NOT NULL,
    failures BIGINT NOT NULL, PRIMARY KEY (user_id, session_id));
"""],
    2: ["""
CREATE TABLE IF NOT EXISTS state_deltas (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name TEXT NOT NULL,
    blob BYTEA NOT NULL);
CREATE INDEX IF NOT EXISTS state_deltas_by_name ON state_deltas (name, seq);
"""],
    3: [rename_legacy_user_state],  # data only: per-user state renamed
    4: ["""
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS reflect_failures INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS reflect_error TEXT,
    ADD COLUMN IF NOT EXISTS reflect_retry_at DOUBLE PRECISION;
"""],
    5: ["""
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE memories ADD COLUMN IF NOT EXISTS metadata TEXT NOT NULL DEFAULT '{}';
"""],
    6: ["""
CREATE TABLE IF NOT EXISTS memory_changes (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, user_id TEXT NOT NULL,
    generation BIGINT NOT NULL, memory_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS memory_changes_by_user ON memory_changes (user_id, seq);
CREATE INDEX IF NOT EXISTS memory_changes_by_generation ON memory_changes (user_id, generation);
"""],
    7: ["""
ALTER TABLE memories ADD COLUMN IF NOT EXISTS validity TEXT NOT NULL DEFAULT '{}';
"""],
}
"""Schema version → what brings the previous version to it (`sql.schema` runs them on open)."""

assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))

TEXT_COLUMNS = {
    "turns": ("text", "speaker"),
    "sessions": ("metadata", "reflect_error"),
    "memories": ("text", "key", "attrs", "metadata", "speakers", "validity"),
    "memory_versions": ("text",),
    "named_state": ("blob",),
}
"""Columns that hold what users said (or text made from it): no query filters or sorts on
them, so the planner needs no statistics of them, and none are kept (`drop_text_statistics`).
In-database search's `lexemes` keep theirs: it reads their most common lexemes."""

LEXEMES_TRIGGER = """
CREATE TRIGGER memories_lexemes BEFORE INSERT OR UPDATE OF key ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_lexemes();
"""
LEXEMES_DDL = f"""
ALTER TABLE memories ADD COLUMN lexemes tsvector;
CREATE OR REPLACE FUNCTION memories_lexemes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.lexemes := to_tsvector('{TEXT_SEARCH}', NEW.key); RETURN NEW; END $$;
""" + LEXEMES_TRIGGER
"""Each memory's key's lexemes, filled on write by the server itself (so by every release
that writes): what in-database search matches and scores. A column without a default is
added without rewriting the table; rows written before it are filled by the search
indexes' build (`build`). Not a versioned step: an earlier release still reads and
writes the store, and a store that never searches in the database pays one `to_tsvector`
a write."""


def migrate(conn: Any, schema: str, url: str) -> None:
    """Create or upgrade `schema` on an autocommit connection, one process at a time
    (advisory lock); `url` only names the server in errors."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except Exception as exc:
            raise StorageError(redact(
                "the pgvector extension is not available on this PostgreSQL server "
                f"(CREATE EXTENSION vector failed: {str(exc).strip()})", url)) from exc
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        conn.execute(f"SET LOCAL search_path TO {schema}, public")
        tables = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,))}
        upgrade(PgTx(conn), MIGRATIONS, tables, where=f"schema {schema!r}",
                foreign=f"schema {schema!r} holds another application's tables; choose "
                        "another with ?rmm_schema=name")
        if not conn.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = %s "
                            "AND table_name = 'memories' AND column_name = 'lexemes'",
                            (schema,)).fetchone():
            conn.execute(LEXEMES_DDL)
        drop_text_statistics(conn, schema)


def drop_text_statistics(conn: Any, schema: str) -> None:
    """Keep ANALYZE from sampling `TEXT_COLUMNS`, and drop what it sampled of them before:
    the planner's statistics (`pg_stats`) would keep a deleted or forgotten text after its
    row is gone, in plain view of any role that can read the table. Once per store."""
    pending = conn.execute(
        "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
        "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relkind = 'r' AND NOT a.attisdropped AND "
        "a.attstattarget IS DISTINCT FROM 0", (schema,)).fetchall()
    pending = [row for row in pending if row[1] in TEXT_COLUMNS.get(row[0], ())]
    if any(table == "memories" and column == "key" for table, column, _ in pending):
        conn.execute("DROP TRIGGER IF EXISTS memories_lexemes ON memories")  # depends on key
    for table, column, kind in pending:
        # changing a column to its own type rewrites nothing and drops its statistics
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET STATISTICS 0, "
                     f"ALTER COLUMN {column} TYPE {kind}")
    if any(table == "memories" and column == "key" for table, column, _ in pending):
        conn.execute(LEXEMES_TRIGGER)
