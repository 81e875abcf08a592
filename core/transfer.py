"""Export a user's memory as JSON-ready records, and restore it, exactly, in another store.

One record per line when written out: a header, then the user's sessions, turns and
memories. A memory carries its version history and its vectors (base64 float32), so a
restore needs no embedding model and no LLM, and gives back what reflection had made
(merged or LLM-written memories would not come back from re-reflecting the turns).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from .errors import InvalidInputError
from .storage.base import NewMemory, SessionState, Store
from .storage.sql import from_iso, iso, new_memory_id
from .types import Memory, MemoryVersion, Turn, check_id

FORMAT = "rmm-export"
VERSION = 1


def export_records(store: Store, user_id: str) -> Iterator[dict[str, Any]]:
    """The user's data as records: header, sessions, turns (log order), memories."""
    sessions = store.sessions(user_id)
    memories = store.memories(user_id)
    yield {"type": "header", "format": FORMAT, "version": VERSION, "user_id": user_id,
           "sessions": len(sessions), "memories": len(memories)}
    for s in sessions:
        yield {"type": "session", "session_id": s.session_id, "status": s.status,
               "started_at": iso(s.started_at), "last_activity": s.last_activity,
               "n_turns": s.n_turns, "reflected": s.reflected}
    for t in store.turns(user_id):
        yield {"type": "turn", "session_id": t.session_id, "id": t.id, "speaker": t.speaker,
               "text": t.text, "timestamp": iso(t.timestamp)}
    vectors = store.memory_vectors(user_id, [m.id for m in memories])
    for m in memories:
        rows = np.ascontiguousarray(vectors.get(m.id, np.zeros((0, 0))), dtype=np.float32)
        yield {"type": "memory", "id": m.id, "text": m.text, "key": m.key, "refs": m.refs,
               "speakers": m.speakers, "session_ids": m.session_ids,
               "occurred_at": iso(m.occurred_at), "created_at": iso(m.created_at),
               "updated_at": iso(m.updated_at), "attrs": m.attrs,
               "versions": [{"version": v.version, "text": v.text, "refs": list(v.refs),
                             "reason": v.reason, "at": iso(v.at), "source": v.source}
                            for v in m.versions],
               "vector_shape": list(rows.shape),
               "vectors": base64.b64encode(rows.tobytes()).decode("ascii")}


def import_records(store: Store, records: Iterable[dict[str, Any]], *,
                   user_id: str | None = None) -> dict[str, Any]:
    """Restore exported records into `store` (as `user_id`, else the exported user).

    Under a new user id the memories get new ids (and A-MEM links follow them), so a user
    can be copied within one store. Raises `InvalidInputError`, writing nothing, on records
    that are not a complete export or when the target user already has data.
    """
    header, sessions, turns, memories = None, [], [], []
    for number, record in enumerate(records, start=1):
        try:
            kind = record["type"]
            if kind == "header":
                if record.get("format") != FORMAT or record.get("version") != VERSION:
                    raise InvalidInputError(f"not an {FORMAT} v{VERSION} export")
                header = record
            elif kind == "session":
                sessions.append(record)
            elif kind == "turn":
                turns.append(Turn.coerce({k: record[k] for k in
                                          ("speaker", "text", "id", "timestamp", "session_id")}))
            elif kind == "memory":
                memories.append(record)
            else:
                raise InvalidInputError(f"unknown record type {kind!r}")
        except (KeyError, TypeError) as exc:
            raise InvalidInputError(f"record {number} is malformed: missing {exc}") from exc
        except InvalidInputError as exc:
            raise InvalidInputError(f"record {number}: {exc}") from exc
    if header is None:
        raise InvalidInputError(f"no {FORMAT} header record: is this an export?")
    if len(sessions) != header.get("sessions") or len(memories) != header.get("memories"):
        raise InvalidInputError("the export is incomplete: its header counts other records")
    try:
        source = check_id(header["user_id"], "exported user_id")
        target = check_id(user_id or source, "user_id")
        renamed = {m["id"]: new_memory_id() if target != source else m["id"] for m in memories}
        states = [SessionState(target, s["session_id"], s["status"], from_iso(s["started_at"]),
                               float(s["last_activity"]), int(s["n_turns"]),
                               int(s["reflected"])) for s in sessions]
        restored = [_memory(m, target, renamed) for m in memories]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"a session or memory record is malformed: {exc}") from exc
    store.restore(target, states, turns, restored)
    return {"user_id": target, "sessions": len(states), "turns": len(turns),
            "memories": len(restored)}


def _memory(record: dict[str, Any], user_id: str, renamed: dict[str, str]) -> NewMemory:
    attrs = dict(record["attrs"])
    if isinstance(attrs.get("links"), list):
        attrs["links"] = [renamed.get(x, x) for x in attrs["links"]]
    shape = tuple(record["vector_shape"])
    vectors = np.frombuffer(base64.b64decode(record["vectors"]), dtype=np.float32)
    memory = Memory(
        id=renamed[record["id"]], user_id=user_id, text=record["text"], key=record["key"],
        refs=list(record["refs"]), speakers=list(record["speakers"]),
        session_ids=list(record["session_ids"]), occurred_at=from_iso(record["occurred_at"]),
        created_at=from_iso(record["created_at"]), updated_at=from_iso(record["updated_at"]),
        attrs=attrs,
        versions=[MemoryVersion(v["version"], v["text"], tuple(v["refs"]), v["reason"],
                                from_iso(v["at"]), v["source"]) for v in record["versions"]])
    return NewMemory(memory, vectors.reshape(shape))
