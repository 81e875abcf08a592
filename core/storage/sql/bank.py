"""The memory bank: memories, their versions and vectors, written by reflection or directly."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import InvalidInputError, NotFoundError, StorageError
from ...types import FactChange, Memory, MemoryVersion, from_iso, iso, utcnow
from ..base import AttrsUpdate, EmbedderRecord, MergeInto, NewMemory
from .backend import Tx, _chunks, _marks
from .index_data import IndexDataSQL
from .jsontext import dumps, loads, loads_many

_MEMORY_COLS = ("id, user_id, text, key, refs, speakers, session_ids, occurred_at, "
                "created_at, updated_at, attrs, metadata, validity")
_MEMORY_INSERT = (f"INSERT INTO memories ({_MEMORY_COLS}, seq) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_VERSION_INSERT = ("INSERT INTO memory_versions (memory_id, user_id, version, text, refs, "
                   "reason, at, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_VECTOR_INSERT = "INSERT INTO memory_vectors (memory_id, user_id, idx, vec) VALUES (?, ?, ?, ?)"
_EMBEDDER_SELECT = "SELECT key, value FROM meta WHERE key IN ('embedder', 'embedder_probe')"


def _union(a: Sequence[str], b: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))


def _last_versions(db: Tx, user_id: str, ids: Sequence[str]) -> dict[str, int]:
    """Each memory's highest version number (0: none yet), all read at once rather than one
    query a memory."""
    last = dict.fromkeys(ids, 0)
    for chunk in _chunks(list(last)):
        last.update(db.all(f"SELECT memory_id, MAX(version) FROM memory_versions WHERE "
                           f"user_id = ? AND memory_id IN ({_marks(len(chunk))}) "
                           "GROUP BY memory_id", (user_id, *chunk)))
    return last


class MemoryBankSQL(IndexDataSQL):
    """Memories with provenance (`storage.protocols.MemoryBank`); every write bumps the
    user's generation and logs what it changed."""

    _expected_embedder: tuple[EmbedderRecord, Callable[[EmbedderRecord], None]] | None = None
    """The embedder to record with the first vectors written, and its check of another."""

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
            added = self._insert_memories(db, user_id, adds, now, session_id)
            touched = [new.memory.id for new in adds]
            version_rows, vector_rows = [], []
            if merges:
                self._claim_embedder(db)
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
        # only merged memories are read back; a merge into a memory just added wins over it
        by_id = {m.id: m for m in added}
        by_id.update((m.id, m) for m in self.memories(user_id, [m.target_id for m in merges]))
        return [by_id[mid] for mid in dict.fromkeys(touched)]

    def _insert_memories(self, db: Tx, user_id: str, adds: Sequence[NewMemory],
                         now: str | None, source: str) -> list[Memory]:
        """Insert new memories after the user's last, each with its first version; return
        them decoded from the rows written (as `memories` would read them, without the read)."""
        if not adds:
            return []
        self._claim_embedder(db)
        seq = db.one("SELECT COALESCE(MAX(seq), 0) FROM memories WHERE user_id = ?",
                     (user_id,))[0]
        memory_rows, version_rows, vector_rows = [], [], []
        for position, new in enumerate(adds, start=seq + 1):
            m = new.memory
            memory_rows.append(self._memory_row(m, user_id, position))
            version_rows.append((m.id, user_id, 1, self._enc(m.text), dumps(m.refs),
                                 "created", now, source))
            vector_rows += self._vector_rows(m.id, user_id, new.vectors)
        db.many(_MEMORY_INSERT, memory_rows)
        db.many(_VERSION_INSERT, version_rows)
        db.many(_VECTOR_INSERT, vector_rows)
        out = self._memories_from_rows(memory_rows)
        for m, v in zip(out, self._versions_from_rows([v[2:] for v in version_rows])):
            m.versions.append(v)
        return out

    def _memory_row(self, m: Memory, user_id: str, seq: int) -> tuple:
        return (m.id, user_id, self._enc(m.text), self._enc(m.key), dumps(m.refs),
                dumps(m.speakers), dumps(m.session_ids), iso(m.occurred_at),
                iso(m.created_at), iso(m.updated_at), dumps(m.attrs), dumps(m.metadata),
                dumps(m.validity()), seq)

    def add_memories(self, user_id: str, adds: Sequence[NewMemory], source: str) -> list[Memory]:
        with self._tx(f"user:{user_id}") as db:
            ids = [new.memory.id for new in adds]
            have = {row[0] for chunk in _chunks(ids) for row in db.all(
                f"SELECT id FROM memories WHERE user_id = ? AND id IN ({_marks(len(chunk))})",
                (user_id, *chunk))}
            adds = [new for new in adds if new.memory.id not in have]
            added = self._insert_memories(db, user_id, adds, iso(utcnow()), source)
            if adds:
                self._bump(db, user_id, [new.memory.id for new in adds])
        return added

    def update_memory(self, user_id: str, memory_id: str, text: str, key: str,
                      vectors: np.ndarray, metadata: dict[str, Any]) -> Memory:
        now = iso(utcnow())
        with self._tx(f"user:{user_id}") as db:
            row = db.one("SELECT refs FROM memories WHERE id = ? AND user_id = ?",
                         (memory_id, user_id))
            if row is None:
                raise NotFoundError(f"no memory {memory_id!r} for this user")
            self._claim_embedder(db)
            db.run("UPDATE memories SET text = ?, key = ?, metadata = ?, updated_at = ? "
                   "WHERE id = ? AND user_id = ?", (self._enc(text), self._enc(key),
                                                    dumps(metadata), now, memory_id,
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
            self._bump(db, user_id, [memory_id, *self._unlink_changes(db, user_id, memory_id)])

    def _unlink_changes(self, db: Tx, user_id: str, memory_id: str) -> list[str]:
        """Take a deleted memory out of the supersession fields of the memories it changed
        or contradicted (returned): what it changed one with (`changed_to`) is its own text,
        which search would go on quoting. One it superseded is current again."""
        changed = []
        for mid, validity in db.all("SELECT id, validity FROM memories WHERE user_id = ? AND "
                                    "validity <> '{}'", (user_id,)):
            fields = loads(validity)
            if fields.get("superseded_by") == memory_id:
                for key in ("valid_to", "superseded_by", "changed_part", "changed_to"):
                    fields.pop(key, None)
            for key in ("supersedes", "conflicts"):
                kept = [i for i in fields.pop(key, ()) if i != memory_id]
                if kept:
                    fields[key] = kept
            if fields != loads(validity):
                db.run("UPDATE memories SET validity = ? WHERE id = ? AND user_id = ?",
                       (dumps(fields), mid, user_id))
                changed.append(mid)
        return changed

    def _merge(self, db: Tx, user_id: str, merge: MergeInto, now: str | None) -> tuple:
        """Update the target memory in place; return its new version row (vectors replaced)."""
        old = db.one("SELECT refs, speakers, session_ids FROM memories "
                     "WHERE id = ? AND user_id = ?", (merge.target_id, user_id))
        if old is None:
            raise StorageError(f"merge target {merge.target_id} vanished")
        refs = _union(loads(old[0]), merge.refs)
        speakers = _union(loads(old[1]), merge.speakers)
        sessions = _union(loads(old[2]), merge.session_ids)
        db.run("UPDATE memories SET text = ?, key = ?, refs = ?, speakers = ?, session_ids = ?, "
               "updated_at = ? WHERE id = ? AND user_id = ?",
               (self._enc(merge.text), self._enc(merge.key), dumps(refs),
                dumps(speakers), dumps(sessions), now, merge.target_id, user_id))
        version = db.one("SELECT MAX(version) FROM memory_versions WHERE memory_id = ? AND "
                         "user_id = ?", (merge.target_id, user_id))[0] + 1
        db.run("DELETE FROM memory_vectors WHERE memory_id = ? AND user_id = ?",
               (merge.target_id, user_id))
        return (merge.target_id, user_id, version, self._enc(merge.text), dumps(refs),
                "merged", now, merge.source)

    def _vector_rows(self, memory_id: str, user_id: str, vectors: np.ndarray) -> list[tuple]:
        return [(memory_id, user_id, i, self._vec_param(v))
                for i, v in enumerate(np.atleast_2d(np.asarray(vectors, dtype=np.float32)))]

    def record_changes(self, user_id: str, changes: Sequence[FactChange]) -> list[Memory]:
        if not changes:
            return []
        ids = list(dict.fromkeys(i for c in changes for i in (c.old_id, c.new_id)))
        now = iso(utcnow())
        with self._tx(f"user:{user_id}") as db:
            rows = {}
            for chunk in _chunks(ids):
                rows.update((r[0], r[1:]) for r in db.all(
                    f"SELECT id, validity, text, refs FROM memories WHERE user_id = ? AND id "
                    f"IN ({_marks(len(chunk))})", (user_id, *chunk)))
            missing = [i for i in ids if i not in rows]
            if missing:
                raise NotFoundError(f"no memory {missing[0]!r} for this user")
            validity = {i: loads(r[0]) for i, r in rows.items()}
            versions = []
            for c in changes:
                old, new = validity[c.old_id], validity[c.new_id]
                if c.kind == "conflicts":
                    old["conflicts"] = _union(old.get("conflicts", []), [c.new_id])
                    new["conflicts"] = _union(new.get("conflicts", []), [c.old_id])
                    continue
                old.update(valid_to=iso(c.at), superseded_by=c.new_id)
                for key, value in (("changed_part", c.part), ("changed_to", c.by)):
                    old.pop(key, None)
                    if value:
                        old[key] = value
                new["supersedes"] = _union(new.get("supersedes", []), [c.old_id])
                versions.append((c.old_id, rows[c.old_id][1], rows[c.old_id][2], c.new_id))
            for mid, fields in validity.items():
                db.run("UPDATE memories SET validity = ? WHERE id = ? AND user_id = ?",
                       (dumps(fields), mid, user_id))
            last = _last_versions(db, user_id, [v[0] for v in versions])
            for mid, text, refs, source in versions:
                last[mid] += 1
                db.run(_VERSION_INSERT, (mid, user_id, last[mid], text, refs, "superseded",
                                         now, source))
            self._bump(db, user_id, list(validity))  # a search's decoded memories hold it
        return self.memories(user_id, ids)

    def update_memory_attrs(self, user_id: str, updates: Sequence[AttrsUpdate]) -> list[Memory]:
        now = iso(utcnow())
        with self._tx(f"user:{user_id}") as db:
            last = _last_versions(db, user_id, [u.memory_id for u in updates if u.reason])
            for up in updates:
                row = db.one("SELECT text, refs FROM memories WHERE id = ? AND user_id = ?",
                             (up.memory_id, user_id))
                if row is None:
                    raise InvalidInputError(f"no memory {up.memory_id!r} for this user")
                db.run("UPDATE memories SET attrs = ?, key = COALESCE(?, key) "
                       "WHERE id = ? AND user_id = ?",
                       (dumps(up.attrs), None if up.key is None else self._enc(up.key),
                        up.memory_id, user_id))
                if up.key_vector is not None:
                    self._claim_embedder(db)
                    db.run("UPDATE memory_vectors SET vec = ? WHERE memory_id = ? AND "
                           "user_id = ? AND idx = 0",
                           (self._vec_param(np.asarray(up.key_vector, dtype=np.float32)),
                            up.memory_id, user_id))
                if up.reason:
                    last[up.memory_id] += 1
                    db.run("UPDATE memories SET updated_at = ? WHERE id = ? AND user_id = ?",
                           (now, up.memory_id, user_id))
                    db.run("INSERT INTO memory_versions (memory_id, user_id, version, text, "
                           "refs, reason, at, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (up.memory_id, user_id, last[up.memory_id], row[0], row[1],
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
        out = self._memories_from_rows(rows)
        if with_versions and out:
            by_id = {m.id: m for m in out}
            for chunk in _chunks(list(by_id)):
                found = self._read(
                    "SELECT memory_id, version, text, refs, reason, at, source FROM "
                    f"memory_versions WHERE user_id = ? AND memory_id IN "
                    f"({_marks(len(chunk))}) ORDER BY version", (user_id, *chunk))
                for v, version in zip(found, self._versions_from_rows([v[1:] for v in found])):
                    by_id[v[0]].versions.append(version)
        return out

    def _memories_from_rows(self, rows: Sequence[Sequence[Any]]) -> list[Memory]:
        """Memories from their stored columns (in `_MEMORY_COLS` order), versions not
        included; their JSON columns parsed at once."""
        values = loads_many([t for r in rows for t in (r[4], r[5], r[6], r[10], r[11], r[12])])
        out = []
        for n, r in enumerate(rows):
            refs, speakers, session_ids, attrs, metadata, validity = values[6 * n:6 * n + 6]
            memory = Memory(id=r[0], user_id=r[1], text=self._dec(r[2]), key=self._dec(r[3]),
                            refs=refs, speakers=speakers, session_ids=session_ids,
                            occurred_at=from_iso(r[7]), created_at=from_iso(r[8]),
                            updated_at=from_iso(r[9]), attrs=attrs, metadata=metadata)
            memory.set_validity(validity)
            out.append(memory)
        return out

    def _versions_from_rows(self, rows: Sequence[Sequence[Any]]) -> list[MemoryVersion]:
        """Versions from their stored (version, text, refs, reason, at, source)."""
        refs = loads_many([v[2] for v in rows])
        return [MemoryVersion(v[0], self._dec(v[1]), tuple(r), v[3], from_iso(v[4]), v[5])
                for v, r in zip(rows, refs)]

    def memory_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, list[Any]] = {}
        for chunk in _chunks(list(ids)):
            for mid, value in self._read(
                    "SELECT memory_id, vec FROM memory_vectors WHERE user_id = ? AND "
                    f"memory_id IN ({_marks(len(chunk))}) ORDER BY memory_id, idx",
                    (user_id, *chunk)):
                out.setdefault(mid, []).append(value)
        return {k: self._vec_stack(v) for k, v in out.items()}

    def vector_dim(self) -> int | None:
        rows = self._read(f"SELECT {self._VECTOR_DIM_SQL} FROM memory_vectors LIMIT 1")
        return int(rows[0][0]) if rows else None

    def embedder(self) -> EmbedderRecord | None:
        return self._embedder_from(self._read(_EMBEDDER_SELECT))

    def _embedder_from(self, rows: Sequence[tuple]) -> EmbedderRecord | None:
        meta = dict(rows)
        if "embedder" not in meta:
            return None
        probe = meta.get("embedder_probe")
        return EmbedderRecord(self._dec(meta["embedder"]), None if probe is None else
                              np.frombuffer(base64.b64decode(probe), dtype=np.float32))

    def record_embedder(self, record: EmbedderRecord) -> EmbedderRecord | None:
        with self._tx("meta:embedder") as db:  # the first of processes opening it at once wins
            return self._record_embedder(db, record)

    def _record_embedder(self, db: Tx, record: EmbedderRecord) -> EmbedderRecord:
        """Record `record` in `db`'s transaction unless one is recorded; the one recorded."""
        db.lock("meta:embedder")
        recorded = self._embedder_from(db.all(_EMBEDDER_SELECT))
        if recorded is not None:
            return recorded
        rows = [("embedder", self._enc(record.name))]
        if record.probe is not None:
            probe = np.asarray(record.probe, dtype=np.float32).tobytes()
            rows.append(("embedder_probe", base64.b64encode(probe).decode("ascii")))
        db.many("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO "
                "UPDATE SET value = excluded.value", rows)
        return record

    def expect_embedder(self, record: EmbedderRecord,
                        check: Callable[[EmbedderRecord], None]) -> None:
        if self._expected_embedder is not None:  # one store object, one model
            check(self._expected_embedder[0])
            return
        self._expected_embedder = (record, check)

    def _claim_embedder(self, db: Tx) -> None:
        """Before writing memory vectors: record the embedder this store was opened with if
        none is yet, or `check` the one another process recorded first (which raises, and
        the write is rolled back)."""
        if self._expected_embedder is None:
            return
        record, check = self._expected_embedder
        recorded = self._record_embedder(db, record)
        if recorded is not record:  # recorded and committed before: checked once for all
            check(recorded)
            self._expected_embedder = None
