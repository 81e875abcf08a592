"""A crafted or damaged export is refused whole, before anything is written: non-finite or
misshapen vectors, vectors of another dimension than the store's, turns of a session the
file lacks, repeated ids, impossible session records.

Real SQLite files built with the real embedder; the CLI runs in-process through `main`.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from rmm_core import InvalidInputError, ReflectiveMemory, Turn
from rmm_core.cli import main
from rmm_core.ops.commands import BAD_DATA, OK
from rmm_core.ops.transfer import export_records, import_records
from rmm_core.storage import open_store


@pytest.fixture(scope="module")
def records(tmp_path_factory, embedder) -> list[dict]:
    """An export of user u1: two sessions, their turns, memories with vectors."""
    path = str(tmp_path_factory.mktemp("src") / "m.sqlite")
    with ReflectiveMemory.open(path, embedder=embedder) as mem:
        mem.add_session([Turn("me", "I adopted a dog called Rex."),
                         Turn("me", "Rex loves the beach.")], user_id="u1", session_id="a")
        mem.add_session([Turn("me", "I started pottery classes on Monday.")], user_id="u1",
                        session_id="b")
        return list(export_records(mem.store, "u1"))


def with_vectors(record: dict, vectors: np.ndarray, shape=None) -> dict:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    return {**record, "vectors": base64.b64encode(vectors.tobytes()).decode(),
            "vector_shape": list(shape or vectors.shape)}


def vectors_of(record: dict) -> np.ndarray:
    raw = np.frombuffer(base64.b64decode(record["vectors"]), dtype=np.float32)
    return raw.reshape(record["vector_shape"]).copy()


def poisoned(records: list[dict], damage: str) -> list[dict]:
    """`records` with one kind of damage."""
    out = [dict(r) for r in records]
    memories = [i for i, r in enumerate(out) if r["type"] == "memory"]
    turns = [i for i, r in enumerate(out) if r["type"] == "turn"]
    sessions = [i for i, r in enumerate(out) if r["type"] == "session"]
    first = out[memories[0]]
    rows = vectors_of(first)
    if damage in ("nan", "inf"):
        rows[0, 3] = np.nan if damage == "nan" else np.inf
        out[memories[0]] = with_vectors(first, rows)
    elif damage == "other dimension":  # every memory consistent, but not the store's 384
        for i in memories:
            out[i] = with_vectors(out[i], vectors_of(out[i])[:, :128])
    elif damage == "mixed dimensions":
        out[memories[0]] = with_vectors(first, rows[:, :128])
    elif damage == "shape lies":  # the bytes of (n, 384) declared as (2n, 192)
        out[memories[0]] = with_vectors(first, rows, (rows.shape[0] * 2, rows.shape[1] // 2))
    elif damage == "shape too big":
        out[memories[0]] = with_vectors(first, rows, (rows.shape[0] + 1, rows.shape[1]))
    elif damage == "turn of an absent session":
        out[turns[-1]] = {**out[turns[-1]], "session_id": "elsewhere"}
    elif damage == "repeated turn id":
        out[turns[1]] = {**out[turns[1]], "id": out[turns[0]]["id"]}
    elif damage == "repeated memory id":
        out[memories[1]] = {**out[memories[1]], "id": first["id"]}
    elif damage == "repeated session":
        out[sessions[1]] = {**out[sessions[1]], "session_id": out[sessions[0]]["session_id"]}
    elif damage == "turn count":
        out[sessions[0]] = {**out[sessions[0]], "n_turns": 7}
    elif damage == "reflected beyond turns":
        out[sessions[0]] = {**out[sessions[0]], "reflected": 9}
    elif damage == "status":
        out[sessions[0]] = {**out[sessions[0]], "status": "hacked"}
    elif damage == "text not a string":
        out[memories[0]] = {**first, "text": {"x": 1}}
    elif damage == "bad base64":
        out[memories[0]] = {**first, "vectors": "@@not base64@@"}
    elif damage == "turn without id":
        out[turns[0]] = {**out[turns[0]], "id": None}
    else:
        raise AssertionError(damage)
    return out


DAMAGES = ["nan", "inf", "other dimension", "mixed dimensions", "shape lies", "shape too big",
           "turn of an absent session", "repeated turn id", "repeated memory id",
           "repeated session", "turn count", "reflected beyond turns", "status",
           "text not a string", "bad base64", "turn without id"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_exports_are_refused_and_nothing_is_written(records, tmp_path, embedder,
                                                            damage):
    target = str(tmp_path / "t.sqlite")
    with ReflectiveMemory.open(target, embedder=embedder) as mem:  # the store holds 384-d
        mem.add_session([Turn("me", "Someone else entirely.")], user_id="other")
        store = mem.store
        with pytest.raises(InvalidInputError):
            import_records(store, poisoned(records, damage), user_id="u1")
        assert not store.has_user("u1")
        assert store.counts()["users"] == 1
        assert import_records(store, records)["memories"] == \
            sum(r["type"] == "memory" for r in records)  # the intact export imports


@pytest.mark.parametrize("damage", ["nan", "shape lies", "turn of an absent session"])
def test_cli_refuses_them_with_exit_5(records, tmp_path, capsys, damage):
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in poisoned(records, damage)))
    db = str(tmp_path / "fresh.sqlite")
    assert main(["--db", db, "import", str(path)]) == BAD_DATA
    assert "nothing imported" in capsys.readouterr().err
    store = open_store(db)
    assert store.counts() == {"users": 0, "sessions": 0, "turns": 0, "memories": 0}
    store.close()
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["--db", db, "import", str(path)]) == OK

