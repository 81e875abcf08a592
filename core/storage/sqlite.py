"""The embedded default store: one SQLite file (or `:memory:`), WAL, safe across processes."""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError, StorageError
from ..types import Memory, MemoryVersion, Turn, utcnow
from .base import SCHEMA_VERSION, IndexData, MergeInto, NewMemory, SessionState, Store

APP_ID = "rmm_core"

_SCHEMA = """
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
CREATE TABLE IF NOT EXISTS memory_vectors (
    memory_id TEXT NOT NULL, user_id TEXT NOT NULL, idx INTEGER NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY (memory_id, idx));
CREATE INDEX IF NOT EXISTS vectors_by_user ON memory_vectors (user_id);
CREATE TABLE IF NOT EXISTS memory_versions (
    memory_id TEXT NOT NULL, user_id TEXT NOT NULL, version INTEGER NOT NULL,
    text TEXT NOT NULL, refs TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL,
    source TEXT, PRIMARY KEY (memory_id, version));
CREATE INDEX IF NOT EXISTS versions_by_user ON memory_versions (user_id);
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

_USER_TABLES = ("turns", "sessions", "memories", "memory_vectors", "memory_versions",
                "user_state", "feedback_log", "llm_usage")


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _vec_bytes(vectors: np.ndarray) -> list[bytes]:
    return [np.asarray(v, dtype=np.float32).tobytes() for v in np.atleast_2d(vectors)]


class SQLiteStore(Store):
    """One connection guarded by a lock; WAL and a busy timeout for other processes."""

    def __init__(self, path: str | Path = ":memory:", *, timeout: float = 60.0) -> None:
        self.path = str(path)
        self.url = self.path if self.path == ":memory:" else f"sqlite:///{self.path}"
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise StorageError(f"cannot open {self.path}: folder {parent} does not exist")
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None,
                                         check_same_thread=False)
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._init_schema()
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"{self.path} is not a usable rmm database: {exc}") from exc

    # plumbing ---------------------------------------------------------------------------
    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken up front (BEGIN IMMEDIATE), so it cannot deadlock."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _init_schema(self) -> None:
        with self._lock:
            tables = {r[0] for r in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "meta" not in tables:
                raise StorageError(f"{self.path} is a SQLite database of another application")
            with self._tx() as db:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                row = db.execute("SELECT value FROM meta WHERE key = 'app'").fetchone()
                if row is None:
                    db.execute("INSERT INTO meta VALUES ('app', ?)", (APP_ID,))
                    db.execute("INSERT INTO meta VALUES ('schema_version', ?)",
                               (str(SCHEMA_VERSION),))
                elif row[0] != APP_ID:
                    raise StorageError(f"{self.path} belongs to another application ({row[0]})")
                version = int(db.execute(
                    "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
                if version > SCHEMA_VERSION:
                    raise StorageError(
                        f"{self.path} has schema version {version}; this rmm_core knows up "
                        f"to {SCHEMA_VERSION}: upgrade the package")

    def _bump(self, db: sqlite3.Connection, user_id: str) -> None:
        # a random token, not a counter: it must differ even after forget() and re-adding
        db.execute("INSERT INTO user_state VALUES (?, ?) ON CONFLICT(user_id) "
                   "DO UPDATE SET generation = excluded.generation",
                   (user_id, secrets.randbits(62) + 1))

    # turn log ---------------------------------------------------------------------------
    def append_turns(self, user_id: str, session_id: str, turns: Sequence[Turn],
                     started_at: datetime | None, now: float) -> list[Turn]:
        with self._tx() as db:
            row = db.execute("SELECT n_turns FROM sessions WHERE user_id = ? AND session_id = ?",
                             (user_id, session_id)).fetchone()
            n = row[0] if row else 0
            stored: list[Turn] = []
            for offset, turn in enumerate(turns, start=1):
                turn_id = turn.id or f"{session_id}:{n + offset}"
                stored.append(Turn(turn.speaker, turn.text, turn_id, turn.timestamp, session_id))
            ids = [t.id for t in stored]
            if len(set(ids)) != len(ids):
                raise InvalidInputError("duplicate turn ids within one append")
            clash = db.execute(
                f"SELECT turn_id FROM turns WHERE user_id = ? AND turn_id IN "
                f"({','.join('?' * len(ids))}) LIMIT 1", (user_id, *ids)).fetchone()
            if clash:
                raise InvalidInputError(f"turn id {clash[0]!r} already exists for this user")
            db.executemany(
                "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(user_id, session_id, n + i, t.id, t.speaker, t.text, _iso(t.timestamp))
                 for i, t in enumerate(stored, start=1)])
            if row:
                db.execute("UPDATE sessions SET n_turns = ?, last_activity = ?, status = "
                           "CASE WHEN status = 'done' THEN 'open' ELSE status END "
                           "WHERE user_id = ? AND session_id = ?",
                           (n + len(stored), now, user_id, session_id))
            else:
                db.execute("INSERT INTO sessions VALUES (?, ?, 'open', ?, ?, ?, 0)",
                           (user_id, session_id, _iso(started_at), now, len(stored)))
        return stored

    def turns(self, user_id: str, session_id: str | None = None, *,
              after_seq: int = 0) -> list[Turn]:
        if session_id is None:
            rows = self._read("SELECT t.speaker, t.text, t.turn_id, t.ts, t.session_id "
                              "FROM turns t JOIN sessions s USING (user_id, session_id) "
                              "WHERE t.user_id = ? ORDER BY s.rowid, t.seq", (user_id,))
        else:
            rows = self._read("SELECT speaker, text, turn_id, ts, session_id FROM turns "
                              "WHERE user_id = ? AND session_id = ? AND seq > ? ORDER BY seq",
                              (user_id, session_id, after_seq))
        return [Turn(r[0], r[1], r[2], _dt(r[3]), r[4]) for r in rows]

    # sessions -----------------------------------------------------------------------------
    def _session_row(self, row: tuple) -> SessionState:
        return SessionState(row[0], row[1], row[2], _dt(row[3]), row[4], row[5], row[6])

    def session(self, user_id: str, session_id: str) -> SessionState | None:
        rows = self._read("SELECT * FROM sessions WHERE user_id = ? AND session_id = ?",
                          (user_id, session_id))
        return self._session_row(rows[0]) if rows else None

    def mark_ended(self, user_id: str, session_id: str) -> bool:
        with self._tx() as db:
            cur = db.execute("UPDATE sessions SET status = CASE WHEN reflected >= n_turns "
                             "THEN 'done' ELSE 'ended' END WHERE user_id = ? AND session_id = ?",
                             (user_id, session_id))
            return cur.rowcount > 0

    def pending_sessions(self, idle_before: float | None,
                         user_id: str | None = None) -> list[SessionState]:
        sql = ("SELECT * FROM sessions WHERE reflected < n_turns AND (status = 'ended'"
               + (" OR last_activity < ?)" if idle_before is not None else ")"))
        params: list[Any] = [idle_before] if idle_before is not None else []
        if user_id is not None:
            sql += " AND user_id = ?"
            params.append(user_id)
        return [self._session_row(r) for r in self._read(sql + " ORDER BY rowid", params)]

    # memories -------------------------------------------------------------------------------
    def commit_reflection(self, user_id: str, session_id: str, expected_reflected: int,
                          reflected: int, adds: Sequence[NewMemory],
                          merges: Sequence[MergeInto]) -> list[Memory] | None:
        now = utcnow()
        with self._tx() as db:
            row = db.execute("SELECT reflected, n_turns, status FROM sessions "
                             "WHERE user_id = ? AND session_id = ?",
                             (user_id, session_id)).fetchone()
            if row is None or row[0] != expected_reflected:
                return None
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) FROM memories WHERE user_id = ?",
                             (user_id,)).fetchone()[0]
            touched: list[str] = []
            for new in adds:
                m = new.memory
                seq += 1
                db.execute("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (m.id, user_id, m.text, m.key, json.dumps(m.refs),
                            json.dumps(m.speakers), json.dumps(m.session_ids),
                            _iso(m.occurred_at), _iso(m.created_at), _iso(m.updated_at),
                            json.dumps(m.attrs), seq))
                db.execute("INSERT INTO memory_versions VALUES (?, ?, 1, ?, ?, 'created', ?, ?)",
                           (m.id, user_id, m.text, json.dumps(m.refs), _iso(now), session_id))
                self._put_vectors(db, m.id, user_id, new.vectors)
                touched.append(m.id)
            for merge in merges:
                old = db.execute("SELECT refs, speakers, session_ids FROM memories "
                                 "WHERE id = ? AND user_id = ?",
                                 (merge.target_id, user_id)).fetchone()
                if old is None:
                    raise StorageError(f"merge target {merge.target_id} vanished")
                refs = _union(json.loads(old[0]), merge.refs)
                speakers = _union(json.loads(old[1]), merge.speakers)
                sessions = _union(json.loads(old[2]), merge.session_ids)
                db.execute("UPDATE memories SET text = ?, key = ?, refs = ?, speakers = ?, "
                           "session_ids = ?, updated_at = ? WHERE id = ?",
                           (merge.text, merge.key, json.dumps(refs), json.dumps(speakers),
                            json.dumps(sessions), _iso(now), merge.target_id))
                version = db.execute("SELECT MAX(version) FROM memory_versions WHERE memory_id = ?",
                                     (merge.target_id,)).fetchone()[0] + 1
                db.execute("INSERT INTO memory_versions VALUES (?, ?, ?, ?, ?, 'merged', ?, ?)",
                           (merge.target_id, user_id, version, merge.text, json.dumps(refs),
                            _iso(now), merge.source))
                db.execute("DELETE FROM memory_vectors WHERE memory_id = ?", (merge.target_id,))
                self._put_vectors(db, merge.target_id, user_id, merge.vectors)
                touched.append(merge.target_id)
            db.execute("UPDATE sessions SET reflected = ?, status = CASE WHEN ? >= n_turns AND "
                       "status = 'ended' THEN 'done' ELSE status END "
                       "WHERE user_id = ? AND session_id = ?",
                       (reflected, reflected, user_id, session_id))
            if touched:
                self._bump(db, user_id)
        return self.memories(user_id, list(dict.fromkeys(touched)))

    def _put_vectors(self, db: sqlite3.Connection, memory_id: str, user_id: str,
                     vectors: np.ndarray) -> None:
        db.executemany("INSERT INTO memory_vectors VALUES (?, ?, ?, ?)",
                       [(memory_id, user_id, i, b) for i, b in enumerate(_vec_bytes(vectors))])

    def memories(self, user_id: str, ids: Sequence[str] | None = None, *,
                 with_versions: bool = True) -> list[Memory]:
        cols = ("id, user_id, text, key, refs, speakers, session_ids, occurred_at, "
                "created_at, updated_at, attrs")
        if ids is None:
            rows = self._read(f"SELECT {cols} FROM memories WHERE user_id = ? ORDER BY seq",
                              (user_id,))
        else:
            rows = []
            for chunk in _chunks(list(ids), 500):
                rows += self._read(f"SELECT {cols} FROM memories WHERE user_id = ? AND id IN "
                                   f"({','.join('?' * len(chunk))})", (user_id, *chunk))
            order = {mid: i for i, mid in enumerate(ids)}
            rows.sort(key=lambda r: order[r[0]])
        out = [Memory(id=r[0], user_id=r[1], text=r[2], key=r[3], refs=json.loads(r[4]),
                      speakers=json.loads(r[5]), session_ids=json.loads(r[6]),
                      occurred_at=_dt(r[7]), created_at=_dt(r[8]), updated_at=_dt(r[9]),
                      attrs=json.loads(r[10])) for r in rows]
        if with_versions and out:
            by_id = {m.id: m for m in out}
            for chunk in _chunks(list(by_id), 500):
                for v in self._read(
                        "SELECT memory_id, version, text, refs, reason, at, source FROM "
                        f"memory_versions WHERE user_id = ? AND memory_id IN "
                        f"({','.join('?' * len(chunk))}) ORDER BY version", (user_id, *chunk)):
                    by_id[v[0]].versions.append(MemoryVersion(
                        v[1], v[2], tuple(json.loads(v[3])), v[4], _dt(v[5]), v[6]))
        return out

    def memory_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, list[np.ndarray]] = {}
        for chunk in _chunks(list(ids), 500):
            for mid, _, blob in self._read(
                    "SELECT memory_id, idx, vec FROM memory_vectors WHERE user_id = ? AND "
                    f"memory_id IN ({','.join('?' * len(chunk))}) ORDER BY memory_id, idx",
                    (user_id, *chunk)):
                out.setdefault(mid, []).append(np.frombuffer(blob, dtype=np.float32))
        return {k: np.vstack(v) for k, v in out.items()}

    def index_data(self, user_id: str) -> IndexData:
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                generation = self._generation(user_id)
                mem_rows = self._conn.execute(
                    "SELECT id, key FROM memories WHERE user_id = ? ORDER BY seq",
                    (user_id,)).fetchall()
                vec_rows = self._conn.execute(
                    "SELECT memory_id, vec FROM memory_vectors WHERE user_id = ? "
                    "ORDER BY memory_id, idx", (user_id,)).fetchall()
            finally:
                self._conn.execute("COMMIT")
        ids = [r[0] for r in mem_rows]
        position = {mid: i for i, mid in enumerate(ids)}
        owner = np.fromiter((position[r[0]] for r in vec_rows), dtype=np.int64,
                            count=len(vec_rows))
        if vec_rows:
            vectors = np.frombuffer(b"".join(r[1] for r in vec_rows), dtype=np.float32)
            vectors = vectors.reshape(len(vec_rows), -1)
        else:
            vectors = np.zeros((0, 0), dtype=np.float32)
        return IndexData(generation, ids, [r[1] for r in mem_rows], vectors, owner)

    def _generation(self, user_id: str) -> int:
        row = self._conn.execute("SELECT generation FROM user_state WHERE user_id = ?",
                                 (user_id,)).fetchone()
        return row[0] if row else 0

    def generation(self, user_id: str) -> int:
        with self._lock:
            return self._generation(user_id)

    def forget(self, user_id: str) -> None:
        with self._tx() as db:
            for table in _USER_TABLES:
                db.execute(f"DELETE FROM {table} WHERE user_id = ?", (user_id,))

    def users(self) -> list[str]:
        return [r[0] for r in self._read(
            "SELECT user_id FROM sessions UNION SELECT user_id FROM memories ORDER BY 1")]

    # learned weights and feedback ------------------------------------------------------------
    def load_state(self, name: str) -> tuple[int, bytes | None]:
        rows = self._read("SELECT version, blob FROM named_state WHERE name = ?", (name,))
        return (rows[0][0], bytes(rows[0][1])) if rows else (0, None)

    def save_state(self, name: str, expected_version: int, blob: bytes) -> bool:
        with self._tx() as db:
            row = db.execute("SELECT version FROM named_state WHERE name = ?", (name,)).fetchone()
            if (row[0] if row else 0) != expected_version:
                return False
            db.execute("INSERT INTO named_state VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE "
                       "SET version = excluded.version, blob = excluded.blob",
                       (name, expected_version + 1, blob))
            return True

    def claim_feedback(self, result_id: str, user_id: str) -> bool:
        with self._tx() as db:
            cur = db.execute("INSERT OR IGNORE INTO feedback_log VALUES (?, ?, ?)",
                             (result_id, user_id, time.time()))
            return cur.rowcount == 1

    # usage --------------------------------------------------------------------------------------
    def add_usage(self, user_id: str, session_id: str, usage: dict[str, Any]) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO llm_usage VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(user_id, session_id) "
                "DO UPDATE SET calls = calls + excluded.calls, "
                "prompt_tokens = prompt_tokens + excluded.prompt_tokens, "
                "completion_tokens = completion_tokens + excluded.completion_tokens, "
                "failures = failures + excluded.failures",
                (user_id, session_id, usage.get("calls", 0), usage.get("prompt_tokens", 0),
                 usage.get("completion_tokens", 0), usage.get("failures", 0)))

    def usage(self, user_id: str | None = None) -> dict[str, int]:
        sql = ("SELECT COUNT(*), COALESCE(SUM(calls), 0), COALESCE(SUM(prompt_tokens), 0), "
               "COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(failures), 0) FROM llm_usage")
        row = self._read(sql + (" WHERE user_id = ?" if user_id else ""),
                         (user_id,) if user_id else ())[0]
        return dict(zip(("sessions", "calls", "prompt_tokens", "completion_tokens", "failures"),
                        row))

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _union(a: Sequence[str], b: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def new_memory_id() -> str:
    return uuid.uuid4().hex
