"""The turn log and its sessions: raw turns, durable before anything else happens."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...errors import DuplicateTurnError, InvalidInputError
from ...types import Turn, from_iso, iso
from ..base import SessionState
from .backend import SQLBackend, Tx, _chunks, _marks
from .jsontext import dumps, loads

_SESSION_COLS = "user_id, session_id, status, started_at, last_activity, n_turns, reflected"
_SESSION_READ = (f"{_SESSION_COLS}, reflect_failures, reflect_error, reflect_retry_at, "
                 "metadata")


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


class TurnLogSQL(SQLBackend):
    """Turns and sessions (`storage.protocols.TurnLog`), with reflection progress marks."""

    # turn log ---------------------------------------------------------------------------
    def append_turns(self, user_id: str, session_id: str, turns: Sequence[Turn],
                     started_at: datetime | None, now: float,
                     metadata: dict[str, Any] | None = None) -> list[Turn]:
        with self._tx(f"user:{user_id}") as db:
            row = db.one("SELECT n_turns, metadata FROM sessions WHERE user_id = ? AND "
                         "session_id = ?", (user_id, session_id))
            n = row[0] if row else 0
            if row and metadata is not None and loads(row[1]) != metadata:
                raise InvalidInputError(f"session {session_id!r} has other metadata "
                                        f"({loads(row[1])!r:.200}); a session keeps one")
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
                        dumps(metadata or {})))
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
                            loads(row[10]))

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

    def open_turns(self, user_id: str) -> list[tuple[Turn, dict[str, Any]]]:
        rows = self._read("SELECT t.speaker, t.text, t.turn_id, t.ts, t.session_id, s.metadata "
                          "FROM sessions s JOIN turns t ON t.user_id = s.user_id AND "
                          "t.session_id = s.session_id AND t.seq > s.reflected "
                          "WHERE s.user_id = ? AND s.reflected < s.n_turns "
                          "ORDER BY s.rowid, t.seq", (user_id,))
        metadata = {text: loads(text) for text in {r[5] for r in rows}}
        return [(Turn(self._dec(r[0]), self._dec(r[1]), r[2], from_iso(r[3]), r[4]),
                 metadata[r[5]]) for r in rows]

    def sessions(self, user_id: str) -> list[SessionState]:
        return [self._session_row(r) for r in self._read(
            f"SELECT {_SESSION_READ} FROM sessions WHERE user_id = ? ORDER BY rowid",
            (user_id,))]
