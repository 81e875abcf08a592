"""What an index is built from: each user's generation, index rows and memory change log."""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence

import numpy as np

from ..base import IndexData, IndexDelta
from .backend import SQLBackend, Tx, _chunks, _marks
from .jsontext import loads

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
        bank order, each memory's vector rows together. A whole bank is read a page at a
        time into one float32 buffer with room to grow after `vectors` (`read.slots` takes
        it as is), so its vectors never exist twice."""
        total = None if ids is not None else db.one(
            "SELECT COUNT(*) FROM memory_vectors WHERE user_id = ?", (user_id,))[0]
        found, keys, sessions, metadata, speakers, seqs = [], [], [], [], [], []
        owners, vectors = [], _Vectors(total)
        for page in _pages(db, user_id, ids):
            at = {r[0]: len(found) + i for i, r in enumerate(page)}
            for r in page:
                found.append(r[0])
                keys.append(self._dec(r[1]))
                # a memory of no session (an added fact) is nobody's neighbour: its own id
                sessions.append((loads(r[2]) or [r[0]])[0])
                metadata.append(loads(r[3]))
                speakers.append(loads(r[4]))
                seqs.append(int(r[5]))
            for chunk in _chunks(list(at)):
                vec_rows = db.all("SELECT memory_id, vec FROM memory_vectors WHERE user_id = ? "
                                  f"AND memory_id IN ({_marks(len(chunk))}) ORDER BY memory_id, "
                                  "idx", (user_id, *chunk))
                if vec_rows:
                    owners.append(np.fromiter((at[r[0]] for r in vec_rows), dtype=np.int64,
                                              count=len(vec_rows)))
                    vectors.add(self._vec_stack([r[1] for r in vec_rows]))
        owner = np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64)
        if ids is not None:  # fetched by id: into bank order (vector rows stay together)
            order = np.argsort(seqs, kind="stable")
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order))
            owner = rank[owner]
            found, keys, sessions, metadata, speakers, seqs = (
                [column[i] for i in order]
                for column in (found, keys, sessions, metadata, speakers, seqs))
        return IndexData(generation, found, keys, vectors.array(), owner, sessions,
                         metadata=metadata, speakers=speakers, seqs=seqs)

    def generation(self, user_id: str) -> int:
        rows = self._read("SELECT generation FROM user_state WHERE user_id = ?", (user_id,))
        return rows[0][0] if rows else 0


_SELECT = ("SELECT id, key, session_ids, metadata, speakers, seq FROM memories "
           "WHERE user_id = ? ")


def _pages(db: Tx, user_id: str, ids: list[str] | None) -> Iterator[list[tuple]]:
    """The user's memory rows (those of `ids`, or all in bank order) a page at a time."""
    if ids is not None:
        for chunk in _chunks(ids):
            yield db.all(_SELECT + f"AND id IN ({_marks(len(chunk))})", (user_id, *chunk))
        return
    last = -(2**63)
    while page := db.all(_SELECT + "AND seq > ? ORDER BY seq LIMIT 5000", (user_id, last)):
        yield page
        last = page[-1][5]


class _Vectors:
    """Vector blocks gathered into one array: with a known `total`, one preallocated buffer
    with a quarter spare for appends; otherwise blocks joined at the end."""

    def __init__(self, total: int | None) -> None:
        self.total, self.blocks, self.buffer, self.used = total, [], None, 0

    def add(self, block: np.ndarray) -> None:
        if self.total is None:
            self.blocks.append(block)
            return
        if self.buffer is None:
            self.buffer = np.empty((self.total + self.total // 4, block.shape[1]),
                                   dtype=np.float32)
        self.buffer[self.used:self.used + len(block)] = block
        self.used += len(block)

    def array(self) -> np.ndarray:
        if self.buffer is not None:
            return self.buffer[:self.used]
        return np.concatenate(self.blocks) if self.blocks else np.zeros((0, 0), np.float32)
