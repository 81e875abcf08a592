"""The PostgreSQL store's schema: versioned DDL and the migration run on open."""

from __future__ import annotations

from typing import Any

from ...errors import StorageError
from ..base import SCHEMA_VERSION
from ..redact import redact
from ..sql import APP_ID, read_schema_version, rename_legacy_user_state
from .build import TEXT_SEARCH
from .tx import SCHEMA_LOCK, PgTx

MIGRATIONS: dict[int, str] = {
    1: """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions (
    rowid BIGINT GENERATED ALWAYS AS IDENTITY,
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, status TEXT NOT NULL,
    started_at TEXT, last_activity DOUBLE PRECISION NOT NULL, n_turns INTEGER NOT NULL,
    reflected INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (user_id, session_id));
CREATE INDEX sessions_pending ON sessions (rowid) WHERE reflected < n_turns;
CREATE TABLE turns (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL,
    turn_id TEXT NOT NULL, speaker TEXT NOT NULL, text TEXT NOT NULL, ts TEXT,
    PRIMARY KEY (user_id, turn_id));
CREATE INDEX turns_by_session ON turns (user_id, session_id, seq);
CREATE TABLE memories (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, text TEXT NOT NULL, key TEXT NOT NULL,
    refs TEXT NOT NULL, speakers TEXT NOT NULL, session_ids TEXT NOT NULL,
    occurred_at TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    attrs TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX memories_by_user ON memories (user_id, seq);
CREATE TABLE memory_vectors (
    memory_id TEXT NOT NULL, user_id TEXT NOT NULL, idx INTEGER NOT NULL, vec vector NOT NULL,
    PRIMARY KEY (memory_id, idx));
CREATE INDEX vectors_by_user ON memory_vectors (user_id);
CREATE TABLE memory_versions (
    memory_id TEXT NOT NULL, user_id TEXT NOT NULL, version INTEGER NOT NULL,
    text TEXT NOT NULL, refs TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL,
    source TEXT, PRIMARY KEY (memory_id, version));
CREATE INDEX versions_by_user ON memory_versions (user_id);
CREATE TABLE user_state (user_id TEXT PRIMARY KEY, generation BIGINT NOT NULL);
CREATE TABLE named_state (name TEXT PRIMARY KEY, version INTEGER NOT NULL, blob BYTEA NOT NULL);
CREATE TABLE feedback_log (
    result_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, at DOUBLE PRECISION NOT NULL);
CREATE INDEX feedback_by_user ON feedback_log (user_id);
CREATE TABLE llm_usage (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, calls BIGINT NOT NULL,
    prompt_tokens BIGINT NOT NULL, completion_tokens BIGINT NOT NULL,
    failures BIGINT NOT NULL, PRIMARY KEY (user_id, session_id));
""",
    2: """
CREATE TABLE state_deltas (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name TEXT NOT NULL,
    blob BYTEA NOT NULL);
CREATE INDEX state_deltas_by_name ON state_deltas (name, seq);
""",
    3: "",  # data only: per-user state renamed (`rename_legacy_user_state`)
    4: """
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS reflect_failures INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS reflect_error TEXT,
    ADD COLUMN IF NOT EXISTS reflect_retry_at DOUBLE PRECISION;
""",
    5: """
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE memories ADD COLUMN IF NOT EXISTS metadata TEXT NOT NULL DEFAULT '{}';
""",
    6: """
CREATE TABLE IF NOT EXISTS memory_changes (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, user_id TEXT NOT NULL,
    generation BIGINT NOT NULL, memory_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS memory_changes_by_user ON memory_changes (user_id, seq);
CREATE INDEX IF NOT EXISTS memory_changes_by_generation ON memory_changes (user_id, generation);
""",
    7: """
ALTER TABLE memories ADD COLUMN IF NOT EXISTS validity TEXT NOT NULL DEFAULT '{}';
""",
}
"""Schema version → DDL that brings the previous version to it; applied in order on open."""

assert max(MIGRATIONS) == SCHEMA_VERSION

LEXEMES_DDL = f"""
ALTER TABLE memories ADD COLUMN lexemes tsvector;
CREATE OR REPLACE FUNCTION memories_lexemes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.lexemes := to_tsvector('{TEXT_SEARCH}', NEW.key); RETURN NEW; END $$;
CREATE TRIGGER memories_lexemes BEFORE INSERT OR UPDATE OF key ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_lexemes();
"""
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
        if tables and "meta" not in tables:
            raise StorageError(f"schema {schema!r} holds another application's tables; "
                               "choose another with ?rmm_schema=name")
        version = 0
        if "meta" in tables:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("app") != APP_ID:
                raise StorageError(f"schema {schema!r} belongs to another application "
                                   f"({meta.get('app')})")
            version = read_schema_version(meta.get("schema_version"), f"schema {schema!r}")
        if version > SCHEMA_VERSION:
            raise StorageError(f"schema {schema!r} has version {version}; this "
                               f"rmm_core knows up to {SCHEMA_VERSION}: upgrade the package")
        for step in range(version + 1, SCHEMA_VERSION + 1):
            if MIGRATIONS[step]:
                conn.execute(MIGRATIONS[step])
        if not conn.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = %s "
                            "AND table_name = 'memories' AND column_name = 'lexemes'",
                            (schema,)).fetchone():
            conn.execute(LEXEMES_DDL)
        if 0 < version < 3:
            rename_legacy_user_state(PgTx(conn))
        if version == 0:
            conn.execute("INSERT INTO meta VALUES ('app', %s)", (APP_ID,))
        conn.execute("INSERT INTO meta VALUES ('schema_version', %s) ON CONFLICT (key) "
                     "DO UPDATE SET value = excluded.value", (str(SCHEMA_VERSION),))
