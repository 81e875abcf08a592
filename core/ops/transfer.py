"""Export a user's memory as JSON-ready records, and restore it, exactly, in another store.

One record per line when written out: a header, then the user's sessions, turns and
memories. Sessions and memories carry their metadata (absent in older exports: none).
A memory carries its version history and its vectors (base64 float32), so a
restore needs no embedding model and no LLM, and gives back what reflection had made
(merged or LLM-written memories would not come back from re-reflecting the turns).
"""

from __future__ import annotations

import base64
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..errors import EmbedderMismatchError, InvalidInputError, StorageError
from ..metadata import check_metadata
from ..models.embed_identity import same_model
from ..storage.base import EmbedderRecord, NewMemory, SessionState, Store
from ..types import Memory, MemoryVersion, Turn, check_id, from_iso, iso, new_memory_id

FORMAT = "rmm-export"
VERSION = 1
MAX_IMPORT_BYTES = 256 * 1024 * 1024
"""Default of `rmm import --max-bytes`: the largest export file read (held in memory whole
while it is checked)."""
STATUSES = ("open", "ended", "done")
"""The states a session can be in (`SessionState.status`)."""


def export_records(store: Store, user_id: str) -> Iterator[dict[str, Any]]:
    """The user's data as records: header, sessions, turns (log order), memories."""
    sessions = store.sessions(user_id)
    memories = store.memories(user_id)
    yield {"type": "header", "format": FORMAT, "version": VERSION, "user_id": user_id,
           "sessions": len(sessions), "memories": len(memories),
           **_embedder_fields(store.embedder())}
    for s in sessions:
        yield {"type": "session", "session_id": s.session_id, "status": s.status,
               "started_at": iso(s.started_at), "last_activity": s.last_activity,
               "n_turns": s.n_turns, "reflected": s.reflected, "metadata": s.metadata}
    for t in store.turns(user_id):
        yield {"type": "turn", "session_id": t.session_id, "id": t.id, "speaker": t.speaker,
               "text": t.text, "timestamp": iso(t.timestamp)}
    vectors = store.memory_vectors(user_id, [m.id for m in memories])
    for m in memories:
        rows = np.ascontiguousarray(vectors.get(m.id, np.zeros((0, 0))), dtype=np.float32)
        yield {"type": "memory", "id": m.id, "text": m.text, "key": m.key, "refs": m.refs,
               "speakers": m.speakers, "session_ids": m.session_ids,
               "occurred_at": iso(m.occurred_at), "created_at": iso(m.created_at),
               "updated_at": iso(m.updated_at), "attrs": m.attrs, "metadata": m.metadata,
               "validity": m.validity(),
               "versions": [{"version": v.version, "text": v.text, "refs": list(v.refs),
                             "reason": v.reason, "at": iso(v.at), "source": v.source}
                            for v in m.versions],
               "vector_shape": list(rows.shape),
               "vectors": base64.b64encode(rows.tobytes()).decode("ascii")}


def import_records(store: Store, records: Iterable[dict[str, Any]], *,
                   user_id: str | None = None) -> dict[str, Any]:
    """Restore exported records into `store` (as `user_id`, else the exported user).

    Under a new user id the memories get new ids (and A-MEM links follow them), so a user
    can be copied within one store; so do they when an id is in use in the store already
    (by anyone: which one is not told). Everything is checked before anything is written:
    records that are not a complete, consistent export (a turn of a session the file lacks,
    a repeated id, vectors that are not finite or not of the store's dimension) raise
    `InvalidInputError`, as does a target user that already has data.
    """
    header, sessions, turns, memories = _read(records)
    try:
        source = check_id(header["user_id"], "exported user_id")
        target = check_id(user_id or source, "user_id")
        _unique([m["id"] for m in memories], "memory id")
        renamed = {m["id"]: new_memory_id() if target != source else m["id"] for m in memories}
        states = [_session(s, target) for s in sessions]
        restored = [_memory(m, target, renamed) for m in memories]
    except InvalidInputError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"a session or memory record is malformed: {exc!r}") from exc
    _check_turns(states, turns)
    store_dim = store.vector_dim()
    _check_vectors(restored, store_dim)
    exported = _exported_embedder(header)
    _check_embedder(store.embedder(), exported)
    try:
        store.restore(target, states, turns, restored)
        fresh = target != source
    except StorageError:
        if target != source or not memories:
            raise
        # memory ids are unique across users, and the store does not say whose one is taken
        # (nor should it to an importer): try once more with new ids, as a copy gets
        renamed = {m["id"]: new_memory_id() for m in memories}
        store.restore(target, states, turns, [_memory(m, target, renamed) for m in memories])
        fresh = True
    if exported is not None and store_dim is None and restored:
        store.record_embedder(exported)  # an empty store takes the export's model
    return {"user_id": target, "sessions": len(states), "turns": len(turns),
            "memories": len(restored), "new_ids": fresh and bool(memories)}


def _embedder_fields(record: EmbedderRecord | None) -> dict[str, Any]:
    """The header's record of the embedder that made the vectors (none: not recorded)."""
    if record is None:
        return {}
    probe = None if record.probe is None else base64.b64encode(
        np.asarray(record.probe, dtype=np.float32).tobytes()).decode("ascii")
    return {"embedder": {"name": record.name, "probe": probe}}


def _exported_embedder(header: dict[str, Any]) -> EmbedderRecord | None:
    """The header's embedder record (None: an export made before it was written)."""
    fields = header.get("embedder")
    if fields is None:
        return None
    try:
        probe = fields.get("probe")
        return EmbedderRecord(_text(fields["name"], "embedder name"), None if probe is None
                              else np.frombuffer(base64.b64decode(probe, validate=True),
                                                 dtype=np.float32))
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"the header's embedder record is malformed: {exc!r}") from exc


def _check_embedder(recorded: EmbedderRecord | None, exported: EmbedderRecord | None) -> None:
    """Refuse vectors of another model than the store's: they would mix silently."""
    if recorded is None or exported is None or same_model(recorded, exported.name,
                                                          exported.probe):
        return
    raise EmbedderMismatchError(
        f"the export's vectors were made by the embedder {exported.name}, this store's by "
        f"{recorded.name}: import it into a new store (or one built with {exported.name})")


def _read(records: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], list, list, list]:
    """Records sorted by type: (header, sessions, turns, memories), the counts checked."""
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
                turn = Turn.coerce({k: record[k] for k in
                                    ("speaker", "text", "id", "timestamp", "session_id")})
                if turn.id is None or turn.session_id is None:
                    raise InvalidInputError("a turn needs its id and session_id")
                turns.append(turn)
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
    return header, sessions, turns, memories


def _session(record: dict[str, Any], user_id: str) -> SessionState:
    state = SessionState(user_id, check_id(record["session_id"], "session_id"), record["status"],
                         from_iso(record["started_at"]), float(record["last_activity"]),
                         _count(record["n_turns"]), _count(record["reflected"]),
                         metadata=check_metadata(record.get("metadata")))
    if state.status not in STATUSES or state.reflected > state.n_turns or \
            not math.isfinite(state.last_activity):
        raise InvalidInputError(f"session {state.session_id!r} has an impossible status, "
                                "progress or activity time")
    return state


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInputError(f"expected a count, got {value!r:.40}")
    return value


def _check_turns(sessions: list[SessionState], turns: list[Turn]) -> None:
    """Every turn belongs to a session of the file, each session has its count of turns."""
    _unique([s.session_id for s in sessions], "session id")
    _unique([t.id for t in turns], "turn id")
    counts = Counter(t.session_id for t in turns)
    for session_id in counts.keys() - {s.session_id for s in sessions}:
        raise InvalidInputError(f"turns of session {session_id!r}, which the export lacks")
    for s in sessions:
        if counts[s.session_id] != s.n_turns:
            raise InvalidInputError(f"session {s.session_id!r} says {s.n_turns} turns, the "
                                    f"export has {counts[s.session_id]}")


def _check_vectors(memories: list[NewMemory], store_dim: int | None) -> None:
    """Finite vectors, one dimension for all, the one the store already holds."""
    dims = {m.vectors.shape[1] for m in memories}
    if len(dims | ({store_dim} if store_dim else set())) > 1:
        raise InvalidInputError(f"vectors of dimension {sorted(dims)} do not fit this store"
                                + (f" (dimension {store_dim})" if store_dim else ""))
    for m in memories:
        if not np.isfinite(m.vectors).all():
            raise InvalidInputError(f"memory {m.memory.id!r} has non-finite vector values")


def _unique(ids: list[str], what: str) -> None:
    repeated = [i for i, n in Counter(ids).items() if n > 1]
    if repeated:
        raise InvalidInputError(f"{what} {repeated[0]!r} appears more than once")


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInputError(f"{what} must be a list of strings")
    return list(value)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, not {type(value).__name__}")
    return value


def _memory(record: dict[str, Any], user_id: str, renamed: dict[str, str]) -> NewMemory:
    if not isinstance(record["attrs"], dict):
        raise InvalidInputError("memory attrs must be an object")
    attrs = dict(record["attrs"])
    if isinstance(attrs.get("links"), list):
        attrs["links"] = [renamed.get(x, x) for x in attrs["links"]]
    memory = Memory(
        id=renamed[check_id(record["id"], "memory id")], user_id=user_id,
        text=_text(record["text"], "memory text"),
        key=_text(record["key"], "memory key"), refs=_strings(record["refs"], "refs"),
        speakers=_strings(record["speakers"], "speakers"),
        session_ids=_strings(record["session_ids"], "session_ids"),
        occurred_at=from_iso(record["occurred_at"]), created_at=from_iso(record["created_at"]),
        updated_at=from_iso(record["updated_at"]), attrs=attrs,
        metadata=check_metadata(record.get("metadata")),
        versions=[MemoryVersion(_count(v["version"]), _text(v["text"], "version text"),
                                tuple(_strings(v["refs"], "version refs")),
                                _text(v["reason"], "version reason"), from_iso(v["at"]),
                                v["source"]) for v in record["versions"]])
    memory.set_validity(_validity(record.get("validity", {}), renamed))
    return NewMemory(memory, _vectors(record))


def _validity(fields: Any, renamed: dict[str, str]) -> dict[str, Any]:
    """A memory's supersession fields, checked, with ids renamed as the memories are."""
    if not isinstance(fields, dict):
        raise InvalidInputError("memory validity must be an object")
    out = dict(fields)
    if out.get("superseded_by") is not None:
        out["superseded_by"] = renamed.get(out["superseded_by"], out["superseded_by"])
    for key in ("supersedes", "conflicts"):
        out[key] = [renamed.get(x, x) for x in _strings(out.get(key, []), key)]
    from_iso(out.get("valid_to"))  # a malformed date fails here, before anything is written
    return out


def _vectors(record: dict[str, Any]) -> np.ndarray:
    """The memory's vector rows: `vector_shape` (rows, dimension) must match the bytes."""
    shape = record["vector_shape"]
    raw = base64.b64decode(record["vectors"], validate=True)
    if not (isinstance(shape, list) and len(shape) == 2 and all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape)) \
            or len(raw) != shape[0] * shape[1] * 4:
        raise InvalidInputError(f"memory {record['id']!r}: vector_shape {shape!r:.40} does "
                                f"not describe its {len(raw)} bytes of float32 vectors")
    return np.frombuffer(raw, dtype=np.float32).reshape(shape)
