"""Learned state: named blobs by compare-and-set, their logged steps and feedback claims."""

from __future__ import annotations

import time
from collections.abc import Sequence

from .backend import SQLBackend, Tx, _chunks, _marks


class NamedStateSQL(SQLBackend):
    """Reranker weights and other named state, and exactly-once feedback."""

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
