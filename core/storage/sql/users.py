"""A user's data as a whole: which users exist, counts, forget and restore."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import InvalidInputError
from ...types import Turn, iso
from ..base import NewMemory, SessionState, user_state_prefix
from .bank import _MEMORY_INSERT, _VECTOR_INSERT, _VERSION_INSERT, MemoryBankSQL
from .jsontext import dumps
from .turns import _SESSION_COLS

USER_TABLES = ("turns", "sessions", "memories", "memory_vectors", "memory_versions",
               "user_state", "feedback_log", "llm_usage", "memory_changes")
"""Every table holding a user's data; `forget` empties each of them for that user."""


class UserDataSQL(MemoryBankSQL):
    """Whole-user operations over every table in `USER_TABLES`."""

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
                      x.n_turns, x.reflected, dumps(x.metadata)) for x in sessions])
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
                                  dumps(list(v.refs)), v.reason, iso(v.at), v.source)
                                 for v in m.versions]
                vector_rows += self._vector_rows(m.id, user_id, new.vectors)
            db.many(_MEMORY_INSERT, memory_rows)
            db.many(_VERSION_INSERT, version_rows)
            db.many(_VECTOR_INSERT, vector_rows)
            self._bump(db, user_id, [new.memory.id for new in memories])
