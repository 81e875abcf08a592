"""What an index is built from: each user's generation, index rows and memory change log."""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence

import numpy as np

from ..base import IndexData, IndexDelta
from .backend import SQLBackend, Tx, _chunks, _marks

CHANGE_LOG_KEEP = 4096
"""Entries of the memory change log kept per user (an index older than that is rebuilt)."""
_REBUILD = ""
"""The change-log entry of a change too large to log memory by memory."""


class IndexDataSQL(SQLBackend):
    """Index rows and the change log that lets a cached index apply only what changed."""

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
        bank order."""
        if ids is None:
            mem_rows = db.all("SELECT id, key, session_ids, metadata, speakers, seq FROM "
                              "memories WHERE user_id = ? ORDER BY seq", (user_id,))
            vec_rows = db.all("SELECT memory_id, vec FROM memory_vectors WHERE user_id = ? "
                              "ORDER BY memory_id, idx", (user_id,))
        else:
            mem_rows, vec_rows = [], []
            for chunk in _chunks(ids):
                marks = _marks(len(chunk))
                mem_rows += db.all("SELECT id, key, session_ids, metadata, speakers, seq FROM "
                                   f"memories WHERE user_id = ? AND id IN ({marks})",
                                   (user_id, *chunk))
                vec_rows += db.all("SELECT memory_id, vec FROM memory_vectors WHERE user_id = "
                                   f"? AND memory_id IN ({marks}) ORDER BY memory_id, idx",
                                   (user_id, *chunk))
            mem_rows.sort(key=lambda r: r[5])
        ids = [r[0] for r in mem_rows]
        position = {mid: i for i, mid in enumerate(ids)}
        owner = np.fromiter((position[r[0]] for r in vec_rows), dtype=np.int64,
                            count=len(vec_rows))
        vectors = (self._vec_stack([r[1] for r in vec_rows]) if vec_rows
                   else np.zeros((0, 0), dtype=np.float32))
        # a memory of no session (an added fact) is nobody's neighbour: its own id stands in
        sessions = [(json.loads(r[2]) or [r[0]])[0] for r in mem_rows]
        return IndexData(generation, ids, [self._dec(r[1]) for r in mem_rows],
                         vectors, owner, sessions, metadata=[json.loads(r[3]) for r in mem_rows],
                         speakers=[json.loads(r[4]) for r in mem_rows],
                         seqs=[int(r[5]) for r in mem_rows])

    def generation(self, user_id: str) -> int:
        rows = self._read("SELECT generation FROM user_state WHERE user_id = ?", (user_id,))
        return rows[0][0] if rows else 0
