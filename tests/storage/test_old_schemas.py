"""Stores written by every earlier schema version open under this one, with their data.

Each is rebuilt as its release wrote it: SQLite from the one schema script of the time (a
store's tables were created at their version's shape), PostgreSQL by its numbered steps up to
that version, before the lexemes column existed. Opening brings it to `SCHEMA_VERSION` with the
tables and indexes of a new store; a step that fails leaves it as it was.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import numpy as np
import pytest
from backends import fresh_target, split_target

from rmm_core import StorageError
from rmm_core.storage import open_store
from rmm_core.storage.base import SCHEMA_VERSION, NewMemory, user_state_name
from rmm_core.storage.postgres.schema import MIGRATIONS as PG_STEPS
from rmm_core.storage.sql import APP_ID, rename_legacy_user_state
from rmm_core.storage.sqlite_schema import MIGRATIONS as SQLITE_STEPS
from rmm_core.types import Memory

pytestmark = pytest.mark.backends
VECTOR = (np.linspace(-1, 1, 8) / np.linalg.norm(np.linspace(-1, 1, 8))).astype(np.float32)
WEIGHTS = user_state_name("u", "reranker")

SQLITE_V1 = """
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
    failures INTEGER NOT NULL, PRIMARY KEY (user_id, session_id));
"""
"""The SQLite schema script of version 1's release (the first commits' files had two
narrower indexes and no by-id index: `sqlite_script("1-first")`)."""


def _edit(script: str, old: str, new: str) -> str:
    assert old in script
    return script.replace(old, new)


def sqlite_script(version: str) -> str:
    """The schema script the release of `version` ran on every open, as in its history."""
    if version == "1-first":
        script = _edit(SQLITE_V1, "CREATE INDEX IF NOT EXISTS memories_by_user_id ON memories "
                                  "(user_id, id);\n", "")
        script = _edit(script, "vectors_by_user ON memory_vectors (user_id, memory_id, idx)",
                       "vectors_by_user ON memory_vectors (user_id)")
        return _edit(script, "versions_by_user ON memory_versions (user_id, memory_id, version)",
                     "versions_by_user ON memory_versions (user_id)")
    number, script = int(version), SQLITE_V1
    if number >= 2:
        script += ("CREATE TABLE IF NOT EXISTS state_deltas (\n    seq INTEGER PRIMARY KEY "
                   "AUTOINCREMENT, name TEXT NOT NULL, blob BLOB NOT NULL);\nCREATE INDEX IF "
                   "NOT EXISTS state_deltas_by_name ON state_deltas (name, seq);\n")
    if number >= 4:
        script = _edit(script, "reflected INTEGER NOT NULL DEFAULT 0, PRIMARY KEY",
                       "reflected INTEGER NOT NULL DEFAULT 0, reflect_failures INTEGER NOT NULL "
                       "DEFAULT 0,\n    reflect_error TEXT, reflect_retry_at REAL, PRIMARY KEY")
    if number >= 5:
        script = _edit(script, "reflect_retry_at REAL, PRIMARY KEY",
                       "reflect_retry_at REAL, metadata TEXT NOT NULL DEFAULT '{}',\n    "
                       "PRIMARY KEY")
        script = _edit(script, "attrs TEXT NOT NULL, seq INTEGER NOT NULL);",
                       "attrs TEXT NOT NULL, seq INTEGER NOT NULL, metadata TEXT NOT NULL "
                       "DEFAULT '{}');")
    if number >= 6:
        script += ("CREATE TABLE IF NOT EXISTS memory_changes (\n    seq INTEGER PRIMARY KEY "
                   "AUTOINCREMENT, user_id TEXT NOT NULL, generation INTEGER NOT NULL,\n    "
                   "memory_id TEXT NOT NULL);\nCREATE INDEX IF NOT EXISTS memory_changes_by_user "
                   "ON memory_changes (user_id, seq);\nCREATE INDEX IF NOT EXISTS "
                   "memory_changes_by_generation ON memory_changes (user_id, generation);\n")
    return script


def _fill(run: Callable[..., None], version: int, vector: str) -> None:
    """A user's session, turns, memory with its version and vector, and reranker state, in
    the columns and names of `version` (`vector`: the SQL of the vector parameter)."""
    at = "2024-01-01T00:00:00+00:00"
    run("INSERT INTO meta (key, value) VALUES ('app', ?), ('schema_version', ?)",
        (APP_ID, str(version)))
    run("INSERT INTO sessions (user_id, session_id, status, started_at, last_activity, "
        "n_turns, reflected) VALUES ('u', 's', 'done', NULL, 1.0, 2, 2)")
    for seq, text in ((1, "I adopted a dog called Rex."), (2, "He is two years old.")):
        run("INSERT INTO turns (user_id, session_id, seq, turn_id, speaker, text, ts) VALUES "
            "('u', 's', ?, ?, 'me', ?, NULL)", (seq, f"s:{seq}", text))
    run("INSERT INTO memories (id, user_id, text, key, refs, speakers, session_ids, "
        "occurred_at, created_at, updated_at, attrs, seq) VALUES ('m1', 'u', 'Has a dog, Rex.', "
        "'dog Rex', '[\"s:1\"]', '[\"me\"]', '[\"s\"]', NULL, ?, ?, '{}', 1)", (at, at))
    run("INSERT INTO memory_versions (memory_id, user_id, version, text, refs, reason, at, "
        "source) VALUES ('m1', 'u', 1, 'Has a dog, Rex.', '[\"s:1\"]', 'created', ?, 's')", (at,))
    run(f"INSERT INTO memory_vectors (memory_id, user_id, idx, vec) VALUES ('m1', 'u', 0, "
        f"{vector})", (VECTOR.tobytes() if vector == "?" else str(VECTOR.tolist()),))
    run("INSERT INTO user_state (user_id, generation) VALUES ('u', 1)")
    weights = "reranker/user/u" if version < 3 else WEIGHTS  # hashed names since schema 3
    run("INSERT INTO named_state (name, version, blob) VALUES (?, 1, ?)", (weights, b"w"))
    if version >= 2:
        run("INSERT INTO state_deltas (name, blob) VALUES (?, ?)", (weights, b"d"))


def write_old_store(target: str, version: str) -> None:
    """A store as the release of schema `version` left it, holding one user's data."""
    number = int(version.split("-")[0])
    if not target.startswith("postgresql://"):
        with sqlite3.connect(target) as db:
            db.executescript(sqlite_script(version))
            _fill(lambda sql, params=(): db.execute(sql, params), number, "?")
        db.close()
        return
    import psycopg

    from rmm_core.storage.postgres.tx import PgTx

    base, schema = split_target(target)
    with psycopg.connect(base, autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET LOCAL search_path TO {schema}, public")
        for step in range(1, number + 1):  # PostgreSQL's steps were numbered from the start
            for change in PG_STEPS[step]:
                if change is rename_legacy_user_state:
                    continue  # a data move of rows not written yet
                conn.execute(change)
        tx = PgTx(conn)
        _fill(lambda sql, params=(): tx.run(sql, params), number, "CAST(? AS vector)")


def shape(target: str) -> tuple[dict[str, set[str]], set[str], dict[str, str]]:
    """Each table's columns, the index names (in-database search's left out) and `meta`."""
    if not target.startswith("postgresql://"):
        with sqlite3.connect(target) as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = "
                                               "'table' AND name NOT LIKE 'sqlite_%'")]
            columns = {t: {r[1] for r in db.execute(f"PRAGMA table_info({t})")} for t in tables}
            indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = "
                                                "'index' AND sql IS NOT NULL")}
            meta = dict(db.execute("SELECT key, value FROM meta"))
        db.close()
        return columns, indexes, meta
    import psycopg

    base, schema = split_target(target)
    with psycopg.connect(base) as conn:
        columns: dict[str, set[str]] = {}
        for table, column in conn.execute(
                "SELECT table_name, column_name FROM information_schema.columns WHERE "
                "table_schema = %s", (schema,)):
            columns.setdefault(table, set()).add(column)
        indexes = {r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (schema,))}
        meta = dict(conn.execute(f"SELECT key, value FROM {schema}.meta").fetchall())
    return columns, indexes, meta


def _versions(backend: str) -> list[str]:
    return (["1-first"] if backend == "sqlite" else []) + [
        str(v) for v in range(1, SCHEMA_VERSION)]


@pytest.fixture
def new_store_shape(store_target, tmp_path):
    """The tables and indexes of a store this release creates, on the same backend."""
    backend = "sqlite" if not store_target.startswith("postgresql://") else "postgres"
    targets = fresh_target(backend, tmp_path / "new")
    (tmp_path / "new").mkdir()
    target = next(targets)
    open_store(target).close()
    yield shape(target)
    next(targets, None)


@pytest.mark.parametrize("version", sorted({v for b in ("sqlite", "postgres")
                                            for v in _versions(b)}))
def test_a_store_of_every_earlier_schema_opens_with_its_data(store_target, version,
                                                             new_store_shape):
    if version == "1-first" and store_target.startswith("postgresql://"):
        pytest.skip("only SQLite files were written by the first commits' schema script")
    write_old_store(store_target, version)
    store = open_store(store_target)
    assert [t.text for t in store.turns("u")] == ["I adopted a dog called Rex.",
                                                  "He is two years old."]
    state = store.session("u", "s")
    assert (state.reflected, state.failures, state.last_error, state.metadata) == (2, 0, None,
                                                                                   {})
    [memory] = store.memories("u")
    assert (memory.text, memory.refs, memory.metadata, memory.valid_to) == (
        "Has a dog, Rex.", ["s:1"], {}, None)
    assert [v.reason for v in memory.versions] == ["created"]
    np.testing.assert_allclose(store.memory_vectors("u", ["m1"])["m1"], [VECTOR], rtol=1e-6)
    assert store.load_state(WEIGHTS) == (1, b"w")  # renamed under the hashed id, if older
    assert store.load_state("reranker/user/u") == (0, None)
    for added in ("m2", "m3"):  # the change log starts with the first write after it
        generation = store.generation("u")
        memory = Memory(id=added, user_id="u", text="Rex likes the beach.", key="Rex beach",
                        refs=["s:2"])
        store.add_memories("u", [NewMemory(memory, VECTOR[None, :])], "direct")
    assert store.index_changes("u", generation).data.ids == ["m3"]
    store.close()
    columns, indexes, meta = shape(store_target)
    new_columns, new_indexes, new_meta = new_store_shape
    assert meta == new_meta == {"app": APP_ID, "schema_version": str(SCHEMA_VERSION)}
    assert columns == new_columns
    assert indexes == new_indexes


def test_a_failed_step_leaves_the_store_as_it_was(store_target, monkeypatch):
    postgres = store_target.startswith("postgresql://")
    write_old_store(store_target, "4")
    before = shape(store_target)

    def fail(db):
        raise StorageError("step 7 failed")

    module = "rmm_core.storage.postgres.schema" if postgres else "rmm_core.storage.sqlite"
    steps = PG_STEPS if postgres else SQLITE_STEPS
    monkeypatch.setattr(f"{module}.MIGRATIONS", {**steps, 7: [fail]})
    with pytest.raises(StorageError, match="step 7 failed"):
        open_store(store_target)
    assert shape(store_target) == before  # steps 5 and 6 rolled back with it
    monkeypatch.undo()
    open_store(store_target).close()
    assert shape(store_target)[2]["schema_version"] == str(SCHEMA_VERSION)
