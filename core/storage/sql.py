"""The store logic both SQL backends share; each backend supplies connection, locks and types.

Statements use `?` placeholders and SQL that SQLite and PostgreSQL both accept; a backend
only says how to run them (`_tx`, `_read`, `_snapshot`) and how vectors and text travel.
"""

from __future__ import annotations

import json
import secrets
import time
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from ..errors import DuplicateTurnError, InvalidInputError, NotFoundError, StorageError
from ..types import Memory, MemoryVersion, Turn, from_iso, iso, utcnow
from .base import (
    AttrsUpdate,
    IndexData,
    IndexDelta,
    MergeInto,
    NewMemory,
    SessionState,
    Store,
    legacy_state_renames,
    user_state_prefix,
)

APP_ID = "rmm_core"

USER_TABLES = ("turns", "sessions", "memories", "memory_vectors", "memory_versions",
               "user_state", "feedback_log", "llm_usage", "memory_changes")
"""Every table holding a user's data; `forget` empties each of them for that user."""

CHANGE_LOG_KEEP = 4096
"""Entries of the memory change log kept per user (an index older than that is rebuilt)."""
_REBUILD = ""
"""The change-log entry of a change too large to log memory by memory."""

_SESSION_COLS = "user_id, session_id, status, started_at, last_activity, n_turns, reflected"
_SESSION_READ = (f"{_SESSION_COLS}, reflect_failures, reflect_error, reflect_retry_at, "
                 "metadata")
_MEMORY_COLS = ("id, user_id, text, key, refs, speakers, session_ids, occurred_at, "
                "created_at, updated_at, attrs, metadata")
_MEMORY_INSERT = (f"INSERT INTO memories ({_MEMORY_COLS}, seq) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_VERSION_INSERT = ("INSERT INTO memory_versions (memory_id, user_id, version, text, refs, "
                   "reason, at, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_VECTOR_INSERT = "INSERT INTO memory_vectors (memory_id, user_id, idx, vec) VALUES (?, ?, ?, ?)"


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


def _union(a: Sequence[str], b: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))


def _chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _existing_turn_ids(db: Tx, user_id: str, ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(list(ids)):
        found.update(r[0] for r in db.all(
            f"SELECT turn_id FROM turns WHERE user_id = ? AND turn_id IN "
            f"({_marks(len(chunk))})", (user_id, *chunk)))
    return found


def _auto_ids(db: Tx, user_id: str, session_id: str, n: int,
              given: Sequence[str | None]) -> list[str]:
    """Turn ids, `session:position` for turns given without one; a position id the caller
    already used for another turn gets a suffix (`s:2.2`) instead of failing every append."""
    auto = {i: f"{session_id}:{n + i}" for i, t in enumerate(given, start=1) if not t}
    taken = {t for t in given if t} | _existing_turn_ids(db, user_id, list(auto.values()))
    for i, base in auto.items():
        candidate, k = base, 1
        while candidate in taken:
            k += 1
            candidate = f"{base}.{k}"
            taken |= _existing_turn_ids(db, user_id, [candidate])
        auto[i] = candidate
        taken.add(candidate)
    return [t or auto[i] for i, t in enumerate(given, start=1)]


class SQLStore(Store):
    """Every `Store` method written once over a small backend interface.

    Writes run in `_tx(lock)`: the backend serialises transactions that share a lock key
    (SQLite: one writer at a time; PostgreSQL: an advisory lock per user or state name),
    which is what makes read-then-write steps such as sequence numbers safe.
    """

    # backend interface ------------------------------------------------------------------
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

    # turn log ---------------------------------------------------------------------------
    def append_turns(self, user_id: str, session_id: str, turns: Sequence[Turn],
                     started_at: datetime | None, now: float,
                     metadata: dict[str, Any] | None = None) -> list[Turn]:
        with self._tx(f"user:{user_id}") as db:
            row = db.one("SELECT n_turns, metadata FROM sessions WHERE user_id = ? AND "
                         "session_id = ?", (user_id, session_id))
            n = row[0] if row else 0
            if row and metadata is not None and json.loads(row[1]) != metadata:
                raise InvalidInputError(f"session {session_id!r} has other metadata "
                                        f"({json.loads(row[1])!r:.200}); a session keeps one")
            given = [t.id for t in turns if t.id]
            if len(set(given)) != len(given):
                raise InvalidInputError("duplicate turn ids within one append")
            clash = _existing_turn_ids(db, user_id, given)
            if clash:
                raise DuplicateTurnError(f"turn id {min(clash)!r} already exists for this user")
            ids = _auto_ids(db, user_id, session_id, n, [t.id for t in turns])
            stored = [Turn(t.speaker, t.text, i, t.timestamp, session_id)
                      for t, i in zip(turns, ids)]
            db.many("INSERT INTO turns (user_id, session_id, seq, turn_id, speaker, text, ts) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(user_id, session_id, n + i, t.id, self._enc(t.speaker), self._enc(t.text),
                      iso(t.timestamp)) for i, t in enumerate(stored, start=1)])
            if row:
                db.run("UPDATE sessions SET n_turns = ?, last_activity = ?, status = "
                       "CASE WHEN status = 'done' THEN 'open' ELSE status END "
                       "WHERE user_id = ? AND session_id = ?",
                       (n + len(stored), now, user_id, session_id))
            else:
                db.run(f"INSERT INTO sessions ({_SESSION_COLS}, metadata) "
                       "VALUES (?, ?, 'open', ?, ?, ?, 0, ?)",
                       (user_id, session_id, iso(started_at), now, len(stored),
                        json.dumps(metadata or {})))
        return stored

    def turns(self, user_id: str, session_id: str | None = None, *,
              after_seq: int = 0) -> list[Turn]:
        if session_id is None:
            rows = self._read("SELECT t.speaker, t.text, t.turn_id, t.ts, t.session_id "
                              "FROM turns t JOIN sessions s ON s.user_id = t.user_id AND "
                              "s.session_id = t.session_id WHERE t.user_id = ? "
                              "ORDER BY s.rowid, t.seq", (user_id,))
        else:
            rows = self._read("SELECT speaker, text, turn_id, ts, session_id FROM turns "
                              "WHERE user_id = ? AND session_id = ? AND seq > ? ORDER BY seq",
                              (user_id, session_id, after_seq))
        return [Turn(self._dec(r[0]), self._dec(r[1]), r[2], from_iso(r[3]), r[4]) for r in rows]

    # sessions -----------------------------------------------------------------------------
    def _session_row(self, row: tuple) -> SessionState:
        return SessionState(row[0], row[1], row[2], from_iso(row[3]), row[4], row[5], row[6],
                            row[7], self._dec(row[8]) if row[8] is not None else None, row[9],
                            json.loads(row[10]))

    def session(self, user_id: str, session_id: str) -> SessionState | None:
        rows = self._read(f"SELECT {_SESSION_READ} FROM sessions WHERE user_id = ? AND "
                          "session_id = ?", (user_id, session_id))
        return self._session_row(rows[0]) if rows else None

    def mark_ended(self, user_id: str, session_id: str) -> bool:
        with self._tx(f"user:{user_id}") as db:
            return db.run("UPDATE sessions SET status = CASE WHEN reflected >= n_turns "
                          "THEN 'done' ELSE 'ended' END WHERE user_id = ? AND session_id = ?",
                          (user_id, session_id)) > 0

    def pending_sessions(self, idle_before: float | None, user_id: str | None = None, *,
                         max_failures: int | None = None) -> list[SessionState]:
        sql = (f"SELECT {_SESSION_READ} FROM sessions WHERE reflected < n_turns AND "
               "(status = 'ended'" + (" OR last_activity < ?)" if idle_before is not None
                                      else ")"))
        params: list[Any] = [idle_before] if idle_before is not None else []
        if user_id is not None:
            sql += " AND user_id = ?"
            params.append(user_id)
        if max_failures is not None:
            sql += (" AND reflect_failures < ? AND "
                    "(reflect_retry_at IS NULL OR reflect_retry_at <= ?)")
            params += [max_failures, time.time()]
        return [self._session_row(r) for r in self._read(sql + " ORDER BY rowid", params)]

    def record_reflection_failure(self, user_id: str, session_id: str, error: str, *,
                                  retry_at: float | None, counted: bool = True) -> None:
        with self._tx(f"user:{user_id}") as db:
            db.run("UPDATE sessions SET reflect_failures = reflect_failures + ?, "
                   "reflect_error = ?, reflect_retry_at = ? WHERE user_id = ? AND session_id = ?",
                   (int(counted), self._enc(error[:2000]), retry_at, user_id, session_id))

    def reflection_counts(self, user_id: str | None = None) -> dict[str, int]:
        sql = ("SELECT COUNT(*) - COUNT(NULLIF(reflect_failures, 0)), "
               "COUNT(NULLIF(reflect_failures, 0)) FROM sessions WHERE reflected < n_turns")
        row = self._read(sql + (" AND user_id = ?" if user_id else ""),
                         (user_id,) if user_id else ())[0]
        return {"waiting": int(row[0]), "failed": int(row[1])}

    # memories -------------------------------------------------------------------------------
    def commit_reflection(self, user_id: str, session_id: str, expected_reflected: int,
                          reflected: int, adds: Sequence[NewMemory],
                          merges: Sequence[MergeInto]) -> list[Memory] | None:
        now = iso(utcnow())
        with self._tx(f"user:{user_id}") as db:
            row = db.one("SELECT reflected FROM sessions WHERE user_id = ? AND session_id = ?",
                         (user_id, session_id))
            if row is None or row[0] != expected_reflected:
                return None
            self._insert_memories(db, user_id, adds, now, session_id)
            touched = [new.memory.id for new in adds]
            version_rows, vector_rows = [], []
            for merge in merges:
                version_rows.append(self._merge(db, user_id, merge, now))
                vector_rows += self._vector_rows(merge.target_id, user_id, merge.vectors)
                touched.append(merge.target_id)
            if version_rows:
                db.many(_VERSION_INSERT, version_rows)
            if vector_rows:
                db.many(_VECTOR_INSERT, vector_rows)
            db.run("UPDATE sessions SET reflected = ?, status = CASE WHEN ? >= n_turns "
                   "AND status = 'ended' THEN 'done' ELSE status END, reflect_failures = 0, "
                   "reflect_error = NULL, reflect_retry_at = NULL "
                   "WHERE user_id = ? AND session_id = ?",
                   (reflected, reflected, user_id, session_id))
            if touched:
                self._bump(db, user_id, touched)
        return self.memories(user_id, list(dict.fromkeys(touched)))

    def _insert_memories(self, db: Tx, user_id: str, adds: Sequence[NewMemory],
                         now: str | None, source: str) -> None:
        """Insert new memories after the user's last, each with its first version."""
        if not adds:
            return
        seq = db.one("SELECT COALESCE(MAX(seq), 0) FROM memories WHERE user_id = ?",
                     (user_id,))[0]
        memory_rows, version_rows, vector_rows = [], [], []
        for position, new in enumerate(adds, start=seq + 1):
            m = new.memory
            memory_rows.append(self._memory_row(m, user_id, position))
            version_rows.append((m.id, user_id, 1, self._enc(m.text), json.dumps(m.refs),
                                 "created", now, source))
            vector_rows += self._vector_rows(m.id, user_id, new.vectors)
        db.many(_MEMORY_INSERT, memory_rows)
        db.many(_VERSION_INSERT, version_rows)
        db.many(_VECTOR_INSERT, vector_rows)

    def _memory_row(self, m: Memory, user_id: str, seq: int) -> tuple:
        return (m.id, user_id, self._enc(m.text), self._enc(m.key), json.dumps(m.refs),
                json.dumps(m.speakers), json.dumps(m.session_ids), iso(m.occurred_at),
                iso(m.created_at), iso(m.updated_at), json.dumps(m.attrs),
                json.dumps(m.metadata), seq)

    def add_memories(self, user_id: str, adds: Sequence[NewMemory], source: str) -> list[Memory]:
        with self._tx(f"user:{user_id}") as db:
            self._insert_memories(db, user_id, adds, iso(utcnow()), source)
            if adds:
                self._bump(db, user_id, [new.memory.id for new in adds])
        return self.memories(user_id, [new.memory.id for new in adds])

    def update_memory(self, user_id: str, memory_id: str, text: str, key: str,
                      vectors: np.ndarray, metadata: dict[str, Any]) -> Memory:
        now = iso(utcnow())
        with self._tx(f"user:{user_id}") as db:
            row = db.one("SELECT refs FROM memories WHERE id = ? AND user_id = ?",
                         (memory_id, user_id))
            if row is None:
                raise NotFoundError(f"no memory {memory_id!r} for this user")
            db.run("UPDATE memories SET text = ?, key = ?, metadata = ?, updated_at = ? "
                   "WHERE id = ? AND user_id = ?", (self._enc(text), self._enc(key),
                                                    json.dumps(metadata), now, memory_id,
                                                    user_id))
            version = db.one("SELECT COALESCE(MAX(version), 0) FROM memory_versions WHERE "
                             "memory_id = ? AND user_id = ?", (memory_id, user_id))[0] + 1
            db.run(_VERSION_INSERT, (memory_id, user_id, version, self._enc(text), row[0],
                                     "update", now, "direct"))
            db.run("DELETE FROM memory_vectors WHERE memory_id = ? AND user_id = ?",
                   (memory_id, user_id))
            db.many(_VECTOR_INSERT, self._vector_rows(memory_id, user_id, vectors))
            self._bump(db, user_id, [memory_id])
        return self.memories(user_id, [memory_id])[0]

    def delete_memory(self, user_id: str, memory_id: str) -> None:
        with self._tx(f"user:{user_id}") as db:
            if not db.run("DELETE FROM memories WHERE id = ? AND user_id = ?",
                          (memory_id, user_id)):
                raise NotFoundError(f"no memory {memory_id!r} for this user")
            for table in ("memory_versions", "memory_vectors"):
                db.run(f"DELETE FROM {table} WHERE memory_id = ? AND user_id = ?",
                       (memory_id, user_id))
            self._bump(db, user_id, [memory_id])

    def open_turns(self, user_id: str) -> list[tuple[Turn, dict[str, Any]]]:
        rows = self._read("SELECT t.speaker, t.text, t.turn_id, t.ts, t.session_id, s.metadata "
                          "FROM sessions s JOIN turns t ON t.user_id = s.user_id AND "
                          "t.session_id = s.session_id AND t.seq > s.reflected "
                          "WHERE s.user_id = ? AND s.reflected < s.n_turns "
                          "ORDER BY s.rowid, t.seq", (user_id,))
        metadata = {text: json.loads(text) for text in {r[5] for r in rows}}
        return [(Turn(self._dec(r[0]), self._dec(r[1]), r[2], from_iso(r[3]), r[4]),
                 metadata[r[5]]) for r in rows]

    def _merge(self, db: Tx, user_id: str, merge: MergeInto, now: str | None) -> tuple:
        """Update the target memory in place; return its new version row (vectors replaced)."""
        old = db.one("SELECT refs, speakers, session_ids FROM memories "
                     "WHERE id = ? AND user_id = ?", (merge.target_id, user_id))
        if old is None:
            raise StorageError(f"merge target {merge.target_id} vanished")
        refs = _union(json.loads(old[0]), merge.refs)
        speakers = _union(json.loads(old[1]), merge.speakers)
        sessions = _union(json.loads(old[2]), merge.session_ids)
        db.run("UPDATE memories SET text = ?, key = ?, refs = ?, speakers = ?, session_ids = ?, "
               "updated_at = ? WHERE id = ? AND user_id = ?",
               (self._enc(merge.text), self._enc(merge.key), json.dumps(refs),
                json.dumps(speakers), json.dumps(sessions), now, merge.target_id, user_id))
        version = db.one("SELECT MAX(version) FROM memory_versions WHERE memory_id = ? AND "
                         "user_id = ?", (merge.target_id, user_id))[0] + 1
        db.run("DELETE FROM memory_vectors WHERE memory_id = ? AND user_id = ?",
               (merge.target_id, user_id))
        return (merge.target_id, user_id, version, self._enc(merge.text), json.dumps(refs),
                "merged", now, merge.source)

    def _vector_rows(self, memory_id: str, user_id: str, vectors: np.ndarray) -> list[tuple]:
        return [(memory_id, user_id, i, self._vec_param(np.asarray(v, dtype=np.float32)))
                for i, v in enumerate(np.atleast_2d(vectors))]

    def _bump(self, db: Tx, user_id: str, changed: Sequence[str]) -> None:
        """A new generation for the user, with the memories it changed logged for
        `index_changes` (the last CHANGE_LOG_KEEP entries per user are kept; a change larger
        than that is logged as one entry that says "rebuild")."""
        # a random token, not a counter: it must differ even after forget() and re-adding
        generation = secrets.randbits(62) + 1
        db.run("INSERT INTO user_state (user_id, generation) VALUES (?, ?) "
               "ON CONFLICT (user_id) DO UPDATE SET generation = excluded.generation",
               (user_id, generation))
        ids = list(dict.fromkeys(changed))
        db.many("INSERT INTO memory_changes (user_id, generation, memory_id) VALUES (?, ?, ?)",
                [(user_id, generation, mid) for mid in ids] if len(ids) <= CHANGE_LOG_KEEP
                else [(user_id, generation, _REBUILD)])
        db.run("DELETE FROM memory_changes WHERE user_id = ? AND seq <= (SELECT seq FROM "
               "memory_changes WHERE user_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
               (user_id, user_id, CHANGE_LOG_KEEP))

    def update_memory_attrs(self, user_id: str, updates: Sequence[AttrsUpdate]) -> list[Memory]:
        now = iso(utcnow())
        with self._tx(f"user:{user_id}") as db:
            for up in updates:
                row = db.one("SELECT text, refs FROM memories WHERE id = ? AND user_id = ?",
                             (up.memory_id, user_id))
                if row is None:
                    raise InvalidInputError(f"no memory {up.memory_id!r} for this user")
                db.run("UPDATE memories SET attrs = ?, key = COALESCE(?, key) "
                       "WHERE id = ? AND user_id = ?",
                       (json.dumps(up.attrs), None if up.key is None else self._enc(up.key),
                        up.memory_id, user_id))
                if up.key_vector is not None:
                    db.run("UPDATE memory_vectors SET vec = ? WHERE memory_id = ? AND "
                           "user_id = ? AND idx = 0",
                           (self._vec_param(np.asarray(up.key_vector, dtype=np.float32)),
                            up.memory_id, user_id))
                if up.reason:
                    version = db.one("SELECT MAX(version) FROM memory_versions WHERE "
                                     "memory_id = ? AND user_id = ?", (up.memory_id, user_id))[0]
                    db.run("UPDATE memories SET updated_at = ? WHERE id = ? AND user_id = ?",
                           (now, up.memory_id, user_id))
                    db.run("INSERT INTO memory_versions (memory_id, user_id, version, text, "
                           "refs, reason, at, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (up.memory_id, user_id, (version or 0) + 1, row[0], row[1],
                            up.reason, now, up.source))
            if updates:
                self._bump(db, user_id, [u.memory_id for u in updates])
        return self.memories(user_id, list(dict.fromkeys(u.memory_id for u in updates)))

    def memories(self, user_id: str, ids: Sequence[str] | None = None, *,
                 with_versions: bool = True) -> list[Memory]:
        if ids is None:
            rows = self._read(f"SELECT {_MEMORY_COLS} FROM memories WHERE user_id = ? "
                              "ORDER BY seq", (user_id,))
        else:
            rows = []
            for chunk in _chunks(list(ids)):
                rows += self._read(f"SELECT {_MEMORY_COLS} FROM memories WHERE user_id = ? "
                                   f"AND id IN ({_marks(len(chunk))})", (user_id, *chunk))
            order = {mid: i for i, mid in enumerate(ids)}
            rows.sort(key=lambda r: order[r[0]])
        out = [Memory(id=r[0], user_id=r[1], text=self._dec(r[2]), key=self._dec(r[3]),
                      refs=json.loads(r[4]), speakers=json.loads(r[5]),
                      session_ids=json.loads(r[6]), occurred_at=from_iso(r[7]),
                      created_at=from_iso(r[8]), updated_at=from_iso(r[9]),
                      attrs=json.loads(r[10]), metadata=json.loads(r[11])) for r in rows]
        if with_versions and out:
            by_id = {m.id: m for m in out}
            for chunk in _chunks(list(by_id)):
                for v in self._read(
                        "SELECT memory_id, version, text, refs, reason, at, source FROM "
                        f"memory_versions WHERE user_id = ? AND memory_id IN "
                        f"({_marks(len(chunk))}) ORDER BY version", (user_id, *chunk)):
                    by_id[v[0]].versions.append(MemoryVersion(
                        v[1], self._dec(v[2]), tuple(json.loads(v[3])), v[4], from_iso(v[5]),
                        v[6]))
        return out

    def memory_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, list[Any]] = {}
        for chunk in _chunks(list(ids)):
            for mid, value in self._read(
                    "SELECT memory_id, vec FROM memory_vectors WHERE user_id = ? AND "
                    f"memory_id IN ({_marks(len(chunk))}) ORDER BY memory_id, idx",
                    (user_id, *chunk)):
                out.setdefault(mid, []).append(value)
        return {k: self._vec_stack(v) for k, v in out.items()}

    def index_data(self, user_id: str) -> IndexData:
        with self._snapshot() as db:
            row = db.one("SELECT generation FROM user_state WHERE user_id = ?", (user_id,))
            return self._index_rows(db, user_id, row[0] if row else 0)

    def index_changes(self, user_id: str, since: int) -> IndexDelta | None:
        with self._snapshot() as db:
            row = db.one("SELECT generation FROM user_state WHERE user_id = ?", (user_id,))
            generation = row[0] if row else 0
            if generation == since or not since:  # not since: from an empty bank
                data = self._index_rows(db, user_id, generation, [] if since else None)
                return IndexDelta(data, [])
            start = db.one("SELECT MAX(seq) FROM memory_changes WHERE user_id = ? AND "
                           "generation = ?", (user_id, since))[0]
            if start is None:  # a generation the log no longer (or never) held
                return None
            changed = [r[0] for r in db.all("SELECT DISTINCT memory_id FROM memory_changes "
                                            "WHERE user_id = ? AND seq > ?", (user_id, start))]
            if _REBUILD in changed:
                return None
            data = self._index_rows(db, user_id, generation, changed)
        present = set(data.ids)
        return IndexDelta(data, [mid for mid in changed if mid not in present])

    def _index_rows(self, db: Tx, user_id: str, generation: int,
                    ids: list[str] | None = None) -> IndexData:
        """The index rows of the user's memories (all, or those of `ids` that exist), in
        bank order, each memory's vector rows together. A whole bank is read a page at a
        time into one float32 buffer with room to grow after `vectors` (`read.slots` takes
        it as is), so its vectors never exist twice."""
        select = ("SELECT id, key, session_ids, metadata, speakers, seq FROM memories "
                  "WHERE user_id = ? ")

        def pages() -> Iterator[list[tuple]]:
            if ids is not None:
                for chunk in _chunks(ids):
                    yield db.all(select + f"AND id IN ({_marks(len(chunk))})", (user_id, *chunk))
                return
            last = -(2**63)
            while page := db.all(select + "AND seq > ? ORDER BY seq LIMIT 5000", (user_id, last)):
                yield page
                last = page[-1][5]

        total = None if ids is not None else db.one(
            "SELECT COUNT(*) FROM memory_vectors WHERE user_id = ?", (user_id,))[0]
        found, keys, sessions, metadata, speakers, seqs = [], [], [], [], [], []
        owners, blocks, buffer, used = [], [], None, 0
        for page in pages():
            at = {r[0]: len(found) + i for i, r in enumerate(page)}
            for r in page:
                found.append(r[0])
                keys.append(self._dec(r[1]))
                # a memory of no session (an added fact) is nobody's neighbour: its own id
                sessions.append((json.loads(r[2]) or [r[0]])[0])
                metadata.append(json.loads(r[3]))
                speakers.append(json.loads(r[4]))
                seqs.append(int(r[5]))
            for chunk in _chunks(list(at)):
                vec_rows = db.all("SELECT memory_id, vec FROM memory_vectors WHERE user_id = ? "
                                  f"AND memory_id IN ({_marks(len(chunk))}) ORDER BY memory_id, "
                                  "idx", (user_id, *chunk))
                if not vec_rows:
                    continue
                owners.append(np.fromiter((at[r[0]] for r in vec_rows), dtype=np.int64,
                                          count=len(vec_rows)))
                block = self._vec_stack([r[1] for r in vec_rows])
                if total is None:
                    blocks.append(block)
                    continue
                if buffer is None:
                    buffer = np.empty((total + total // 4, block.shape[1]), dtype=np.float32)
                buffer[used:used + len(block)] = block
                used += len(block)
        owner = np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64)
        vectors = (buffer[:used] if buffer is not None else np.concatenate(blocks) if blocks
                   else np.zeros((0, 0), dtype=np.float32))
        if ids is not None:  # fetched by id: into bank order (vector rows stay together)
            order = np.argsort(seqs, kind="stable")
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order))
            owner = rank[owner]
            found, keys, sessions, metadata, speakers, seqs = (
                [column[i] for i in order]
                for column in (found, keys, sessions, metadata, speakers, seqs))
        return IndexData(generation, found, keys, vectors, owner, sessions, metadata=metadata,
                         speakers=speakers, seqs=seqs)

    def generation(self, user_id: str) -> int:
        rows = self._read("SELECT generation FROM user_state WHERE user_id = ?", (user_id,))
        return rows[0][0] if rows else 0

    def forget(self, user_id: str) -> None:
        pattern = user_state_prefix(user_id) + "%"
        with self._tx(f"user:{user_id}") as db:
            names = sorted(n for (n,) in db.all(
                "SELECT name FROM named_state WHERE name LIKE ? UNION "
                "SELECT name FROM state_deltas WHERE name LIKE ?", (pattern, pattern)))
            for name in names:  # the locks of the compare-and-set writers of that state
                db.lock(f"state:{name}")
            for table in USER_TABLES:
                db.run(f"DELETE FROM {table} WHERE user_id = ?", (user_id,))
            db.run("DELETE FROM state_deltas WHERE name LIKE ?", (pattern,))
            # erased, not deleted: a new version tells every process's cache it changed
            db.many("INSERT INTO named_state (name, version, blob) VALUES (?, 1, ?) "
                    "ON CONFLICT (name) DO UPDATE SET version = named_state.version + 1, "
                    "blob = excluded.blob", [(name, b"") for name in names])

    def users(self) -> list[str]:
        return [r[0] for r in self._read(
            "SELECT user_id FROM sessions UNION SELECT user_id FROM memories ORDER BY 1")]

    def has_user(self, user_id: str) -> bool:
        pattern = user_state_prefix(user_id) + "%"
        sql = " UNION ALL ".join(
            [f"SELECT 1 FROM {table} WHERE user_id = ?" for table in USER_TABLES]
            + ["SELECT 1 FROM named_state WHERE name LIKE ? AND length(blob) > 0",
               "SELECT 1 FROM state_deltas WHERE name LIKE ?"])
        return bool(self._read(f"SELECT EXISTS ({sql})",
                               (*[user_id] * len(USER_TABLES), pattern, pattern))[0][0])

    def vector_dim(self) -> int | None:
        rows = self._read(f"SELECT {self._VECTOR_DIM_SQL} FROM memory_vectors LIMIT 1")
        return int(rows[0][0]) if rows else None

    def sessions(self, user_id: str) -> list[SessionState]:
        return [self._session_row(r) for r in self._read(
            f"SELECT {_SESSION_READ} FROM sessions WHERE user_id = ? ORDER BY rowid",
            (user_id,))]

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        where, params = (" WHERE user_id = ?", (user_id,)) if user_id else ("", ())
        out = {"users": 1 if user_id else len(self.users())}
        for name in ("sessions", "turns", "memories"):
            out[name] = int(self._read(f"SELECT COUNT(*) FROM {name}{where}", params)[0][0])
        return out

    def restore(self, user_id: str, sessions: Sequence[SessionState], turns: Sequence[Turn],
                memories: Sequence[NewMemory]) -> None:
        with self._tx(f"user:{user_id}") as db:
            if db.one("SELECT 1 FROM sessions WHERE user_id = ? UNION ALL "
                      "SELECT 1 FROM memories WHERE user_id = ? LIMIT 1", (user_id, user_id)):
                raise InvalidInputError(f"user {user_id!r} already has data in this store")
            db.many(f"INSERT INTO sessions ({_SESSION_COLS}, metadata) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(user_id, x.session_id, x.status, iso(x.started_at), x.last_activity,
                      x.n_turns, x.reflected, json.dumps(x.metadata)) for x in sessions])
            seq: dict[str, int] = {}
            rows = []
            for t in turns:
                seq[t.session_id] = seq.get(t.session_id, 0) + 1
                rows.append((user_id, t.session_id, seq[t.session_id], t.id,
                             self._enc(t.speaker), self._enc(t.text), iso(t.timestamp)))
            db.many("INSERT INTO turns (user_id, session_id, seq, turn_id, speaker, text, ts) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            memory_rows, version_rows, vector_rows = [], [], []
            for position, new in enumerate(memories, start=1):
                m = new.memory
                memory_rows.append(self._memory_row(m, user_id, position))
                version_rows += [(m.id, user_id, v.version, self._enc(v.text),
                                  json.dumps(list(v.refs)), v.reason, iso(v.at), v.source)
                                 for v in m.versions]
                vector_rows += self._vector_rows(m.id, user_id, new.vectors)
            db.many(_MEMORY_INSERT, memory_rows)
            db.many(_VERSION_INSERT, version_rows)
            db.many(_VECTOR_INSERT, vector_rows)
            self._bump(db, user_id, [new.memory.id for new in memories])

    # learned weights and feedback ------------------------------------------------------------
    def load_state(self, name: str) -> tuple[int, bytes | None]:
        rows = self._read("SELECT version, blob FROM named_state WHERE name = ?", (name,))
        return (rows[0][0], bytes(rows[0][1])) if rows else (0, None)

    def save_state(self, name: str, expected_version: int, blob: bytes) -> bool:
        with self._tx(f"state:{name}") as db:
            return self._cas(db, name, expected_version, blob)

    @staticmethod
    def _cas(db: Tx, name: str, expected_version: int, blob: bytes) -> bool:
        row = db.one("SELECT version FROM named_state WHERE name = ?", (name,))
        if (row[0] if row else 0) != expected_version:
            return False
        db.run("INSERT INTO named_state (name, version, blob) VALUES (?, ?, ?) "
               "ON CONFLICT (name) DO UPDATE SET version = excluded.version, "
               "blob = excluded.blob", (name, expected_version + 1, blob))
        return True

    def append_state_delta(self, name: str, blob: bytes) -> int:
        with self._tx(f"delta:{name}") as db:
            return int(db.one("INSERT INTO state_deltas (name, blob) VALUES (?, ?) "
                              "RETURNING seq", (name, blob))[0])

    def state_log(self, name: str) -> tuple[int, list[int]]:
        rows = self._read("SELECT -1, version FROM named_state WHERE name = ? UNION ALL "
                          "SELECT seq, 0 FROM state_deltas WHERE name = ?", (name, name))
        version = next((r[1] for r in rows if r[0] == -1), 0)
        return version, sorted(r[0] for r in rows if r[0] != -1)

    def state_deltas(self, name: str, seqs: Sequence[int]) -> dict[int, bytes]:
        out: dict[int, bytes] = {}
        for chunk in _chunks(list(seqs)):
            for seq, blob in self._read(f"SELECT seq, blob FROM state_deltas WHERE name = ? "
                                        f"AND seq IN ({_marks(len(chunk))})", (name, *chunk)):
                out[int(seq)] = bytes(blob)
        return out

    def compact_state(self, name: str, expected_version: int, blob: bytes,
                      folded: Sequence[int]) -> bool:
        with self._tx(f"state:{name}") as db:
            if not self._cas(db, name, expected_version, blob):
                return False
            for chunk in _chunks(list(folded)):
                db.run(f"DELETE FROM state_deltas WHERE name = ? AND seq IN "
                       f"({_marks(len(chunk))})", (name, *chunk))
            return True

    def claim_feedback(self, result_id: str, user_id: str,
                       state_delta: tuple[str, bytes] | None = None) -> bool:
        with self._tx(f"user:{user_id}") as db:
            if db.run("INSERT INTO feedback_log (result_id, user_id, at) VALUES (?, ?, ?) "
                      "ON CONFLICT (result_id) DO NOTHING", (result_id, user_id, time.time())) != 1:
                return False
            if state_delta is not None:
                db.run("INSERT INTO state_deltas (name, blob) VALUES (?, ?)", state_delta)
            return True

    # usage --------------------------------------------------------------------------------------
    def add_usage(self, user_id: str, session_id: str, usage: dict[str, Any]) -> None:
        with self._tx(f"user:{user_id}") as db:
            db.run("INSERT INTO llm_usage (user_id, session_id, calls, prompt_tokens, "
                   "completion_tokens, failures) VALUES (?, ?, ?, ?, ?, ?) "
                   "ON CONFLICT (user_id, session_id) DO UPDATE SET "
                   "calls = llm_usage.calls + excluded.calls, "
                   "prompt_tokens = llm_usage.prompt_tokens + excluded.prompt_tokens, "
                   "completion_tokens = llm_usage.completion_tokens + excluded.completion_tokens, "
                   "failures = llm_usage.failures + excluded.failures",
                   (user_id, session_id, int(usage.get("calls", 0)),
                    int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                    int(usage.get("failures", 0))))

    def usage(self, user_id: str | None = None) -> dict[str, int]:
        # session "" holds the calls made outside any session's reflection (respond, ...)
        sql = ("SELECT COUNT(NULLIF(session_id, '')), " + ", ".join(
            f"CAST(COALESCE(SUM({c}), 0) AS BIGINT)"
            for c in ("calls", "prompt_tokens", "completion_tokens", "failures"))
            + " FROM llm_usage")
        row = self._read(sql + (" WHERE user_id = ?" if user_id else ""),
                         (user_id,) if user_id else ())[0]
        return dict(zip(("sessions", "calls", "prompt_tokens", "completion_tokens", "failures"),
                        (int(v) for v in row)))
