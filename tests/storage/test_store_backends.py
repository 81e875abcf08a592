"""The `Store` contract on every backend (SQLite file, PostgreSQL + pgvector).

Store-level tests use random unit vectors; no embedder or LLM is involved.
"""

from __future__ import annotations

import sqlite3
import string
import time
import uuid
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from backends import drop_schema, postgres_url, split_target, with_schema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmm_core import StorageError, Turn
from rmm_core.storage import open_store
from rmm_core.storage.base import SCHEMA_VERSION, MergeInto, NewMemory
from rmm_core.types import Memory, new_memory_id

pytestmark = pytest.mark.backends
DIM = 8
RNG = np.random.default_rng(0)


@pytest.fixture
def store(store_target):
    s = open_store(store_target)
    yield s
    s.close()


def unit(n: int = 1) -> np.ndarray:
    v = RNG.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def new(user: str, text: str, refs: list[str], n_vec: int = 2) -> NewMemory:
    return NewMemory(Memory(id=new_memory_id(), user_id=user, text=text, key=text, refs=refs),
                     unit(n_vec))


def log(store, user="u", session="s", texts=("a", "b")):
    return store.append_turns(user, session, [Turn("x", t) for t in texts], None, time.time())


def test_turn_log_order_ids_and_sessions(store):
    log(store, session="s1", texts=("one", "two"))
    log(store, session="s2", texts=("three",))
    log(store, session="s1", texts=("four",))
    turns = store.turns("u")
    assert [t.text for t in turns] == ["one", "two", "four", "three"]  # by session, then seq
    assert [t.id for t in turns] == ["s1:1", "s1:2", "s1:3", "s2:1"]
    assert [t.text for t in store.turns("u", "s1", after_seq=2)] == ["four"]
    state = store.session("u", "s1")
    assert (state.status, state.n_turns, state.reflected) == ("open", 3, 0)
    assert store.session("u", "nope") is None
    assert store.session("other", "s1") is None


def test_commit_is_compare_and_set_and_exactly_once(store):
    log(store)
    assert store.mark_ended("u", "s")
    assert not store.mark_ended("u", "missing")
    assert [s.session_id for s in store.pending_sessions(None)] == ["s"]
    first = store.commit_reflection("u", "s", 0, 2, [new("u", "m1", ["s:1", "s:2"])], [])
    assert [m.text for m in first] == ["m1"]
    again = store.commit_reflection("u", "s", 0, 2, [new("u", "dup", ["s:1"])], [])
    assert again is None
    assert [m.text for m in store.memories("u")] == ["m1"]
    assert store.session("u", "s").status == "done"
    assert store.pending_sessions(None) == []


def test_merge_keeps_versions_unions_refs_and_replaces_vectors(store):
    log(store, texts=("a", "b", "c"))
    [m] = store.commit_reflection("u", "s", 0, 2, [new("u", "old", ["s:1", "s:2"])], [])
    gen = store.generation("u")
    vecs = unit(3)
    [merged] = store.commit_reflection("u", "s", 2, 3, [], [MergeInto(
        m.id, "old\nnew", "new key", ["s:2", "s:3"], vecs, source="s", speakers=["x"],
        session_ids=["s"])])
    assert merged.id == m.id
    assert merged.text == "old\nnew"
    assert merged.key == "new key"
    assert merged.refs == ["s:1", "s:2", "s:3"]
    assert [(v.version, v.reason, v.text) for v in merged.versions] == [
        (1, "created", "old"), (2, "merged", "old\nnew")]
    np.testing.assert_array_equal(store.memory_vectors("u", [m.id])[m.id], vecs)
    assert store.generation("u") != gen


def test_index_data_is_consistent_and_vectors_round_trip(store):
    log(store, texts=("a", "b", "c"))
    adds = [new("u", f"memory {i}", [f"s:{i + 1}"], n_vec=i + 1) for i in range(3)]
    store.commit_reflection("u", "s", 0, 3, adds, [])
    data = store.index_data("u")
    assert data.ids == [a.memory.id for a in adds]
    assert data.keys == ["memory 0", "memory 1",
                                                                     "memory 2"]
    assert data.vectors.dtype == np.float32
    assert data.vectors.shape == (6, DIM)
    for pos, add in enumerate(adds):
        np.testing.assert_array_equal(data.vectors[data.owner == pos], add.vectors)
    assert data.generation == store.generation("u") != 0
    empty = store.index_data("nobody")
    assert empty.ids == []
    assert len(empty.vectors) == 0
    assert empty.generation == 0


def test_generation_differs_after_forget_and_re_adding(store):
    log(store)
    store.commit_reflection("u", "s", 0, 2, [new("u", "m", ["s:1"])], [])
    before = store.generation("u")
    store.forget("u")
    assert store.generation("u") == 0
    assert store.users() == []
    log(store)
    store.commit_reflection("u", "s", 0, 2, [new("u", "m", ["s:1"])], [])
    assert store.generation("u") not in (0, before)


def test_named_state_compare_and_set_feedback_claims_and_usage(store):
    assert store.load_state("w") == (0, None)
    assert store.save_state("w", 0, b"one")
    assert not store.save_state("w", 0, b"lost")
    assert store.load_state("w") == (1, b"one")
    assert store.save_state("w", 1, b"two")
    assert store.load_state("w") == (2, b"two")
    assert store.claim_feedback("r1", "u")
    assert not store.claim_feedback("r1", "u")
    assert store.claim_feedback("r2", "u", ("w", b"step"))  # claim and logged step at once
    assert not store.claim_feedback("r2", "u", ("w", b"again"))
    assert list(store.state_deltas("w", store.state_log("w")[1]).values()) == [b"step"]
    store.add_usage("u", "s", {"calls": 2, "prompt_tokens": 10})
    store.add_usage("u", "s", {"calls": 1, "completion_tokens": 5, "failures": 1})
    store.add_usage("v", "s", {"calls": 7})
    assert store.usage("u") == {"sessions": 1, "calls": 3, "prompt_tokens": 10,
                                "completion_tokens": 5, "failures": 1}
    assert store.usage()["calls"] == 10


def test_idle_open_sessions_are_pending_ended_ones_always(store):
    store.append_turns("u", "old", [Turn("x", "a")], None, 100.0)
    store.append_turns("u", "new", [Turn("x", "b")], None, time.time())
    assert [s.session_id for s in store.pending_sessions(idle_before=1000.0)] == ["old"]
    assert store.pending_sessions(idle_before=None) == []
    store.mark_ended("u", "new")
    assert [s.session_id for s in store.pending_sessions(None, user_id="u")] == ["new"]
    assert store.pending_sessions(None, user_id="v") == []


def test_a_newer_schema_version_is_refused(store_target):
    store = open_store(store_target)
    store.close()
    _set_meta(store_target, "schema_version", str(SCHEMA_VERSION + 1))
    with pytest.raises(StorageError, match="schema version|has version"):
        open_store(store_target)


def _set_meta(target: str, key: str, value: str) -> None:
    if target.startswith("postgresql://"):
        import psycopg

        base, schema = split_target(target)
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"UPDATE {schema}.meta SET value = %s WHERE key = %s", (value, key))
    else:
        with sqlite3.connect(target) as db:
            db.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))


def test_another_applications_tables_are_refused(store_target):
    open_store(store_target).close()
    _set_meta(store_target, "app", "someone-else")
    with pytest.raises(StorageError, match="another application"):
        open_store(store_target)


TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
               min_size=1, max_size=200).filter(str.strip)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXT, min_size=1, max_size=5),
       speaker=st.text(string.ascii_letters + " é", min_size=1, max_size=10).filter(str.strip))
def test_any_text_round_trips_exactly(store, texts, speaker):
    """Property: whatever text goes in (NUL, controls, the escape char) comes back as is."""
    user = uuid.uuid4().hex
    stored = store.append_turns(user, "s", [Turn(speaker, t) for t in texts], None, time.time())
    assert [(t.speaker, t.text) for t in store.turns(user)] == [(speaker, t) for t in texts]
    key = "\ue000".join(texts)
    store.commit_reflection(user, "s", 0, len(texts),
                            [NewMemory(Memory(new_memory_id(), user, key, key,
                                              [t.id for t in stored]), unit())], [])
    [m] = store.memories(user)
    assert m.text == key
    assert m.key == key
    assert m.versions[0].text == key
    assert store.index_data(user).keys == [key]


# PostgreSQL only ----------------------------------------------------------------------------
@pytest.fixture
def pg_url():
    base = postgres_url()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    yield with_schema(base, schema), base, schema
    drop_schema(base, schema)


@pytest.mark.parametrize("store_target", ["postgres"], indirect=True)
def test_pgvector_search_in_the_database_matches_exact_cosine(store):
    log(store, texts=tuple("abcdefghij"))
    adds = [new("u", f"m{i}", [f"s:{i + 1}"], n_vec=2) for i in range(10)]
    store.commit_reflection("u", "s", 0, 10, adds, [])
    q = unit()[0]
    best = sorted(((float((a.vectors @ q).max()), a.memory.id) for a in adds), reverse=True)
    found = store.vector_search("u", q, 4)
    assert [mid for mid, _ in found] == [mid for _, mid in best[:4]]
    np.testing.assert_allclose([s for _, s in found], [s for s, _ in best[:4]], atol=1e-5)
    assert store.vector_search("other", q, 4) == []


def test_postgres_schema_is_created_versioned_and_reopened(pg_url):
    import psycopg

    url, base, schema = pg_url
    first = open_store(url)
    log(first)
    first.close()
    with psycopg.connect(base) as conn:
        meta = dict(conn.execute(f"SELECT key, value FROM {schema}.meta").fetchall())
    assert meta == {"app": "rmm_core", "schema_version": str(SCHEMA_VERSION)}
    again = open_store(url)
    assert [t.text for t in again.turns("u")] == ["a", "b"]
    again.close()


def test_postgres_foreign_schema_and_bad_urls_are_refused(pg_url):
    import psycopg

    url, base, schema = pg_url
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.accounts (id INT)")
    with pytest.raises(StorageError, match="another application"):
        open_store(url)
    with pytest.raises(StorageError, match="rmm_schema"):
        open_store(with_schema(base, "Bad-Name"))


def test_unreachable_postgres_is_a_storage_error_without_the_password():
    started = time.monotonic()
    with pytest.raises(StorageError, match="cannot reach PostgreSQL") as info:
        open_store("postgresql://rmm:s3cret@127.0.0.1:1/rmm?connect_timeout=2")
    assert "s3cret" not in str(info.value)
    assert time.monotonic() - started < 15


@pytest.mark.parametrize("store_target", ["postgres"], indirect=True)
def test_postgres_reconnects_after_the_link_breaks(store):
    log(store)
    store._conn.close()  # as if the server dropped the connection
    assert [t.text for t in store.turns("u")] == ["a", "b"]


def test_added_memories_are_returned_as_a_later_read_gives_them(store):
    """`add_memories` builds its result from the rows written, without reading them back:
    it must equal what `memories` reads (text the database escapes, JSON, timestamps)."""
    user = uuid.uuid4().hex
    odd = "nul\x00 and \ue000 escape é"
    full = Memory(id=new_memory_id(), user_id=user, text=odd, key="k" + odd, refs=["t1", "t2"],
                  speakers=["alice"], session_ids=["s1"],
                  occurred_at=datetime(2024, 5, 1, 12, 30, tzinfo=timezone(timedelta(hours=2))),
                  created_at=datetime(2024, 5, 2, 8, 0, 0, 123456, tzinfo=timezone.utc),
                  attrs={"links": ["x"], "n": 1}, metadata={"agent_id": "a", "tags": ("p",),
                                                            1: None})
    adds = [NewMemory(full, unit(3)), new(user, "plain", []), new(user, "", [], n_vec=1)]
    returned = store.add_memories(user, adds, source="direct")
    assert returned == store.memories(user) == store.memories(user, [m.memory.id for m in adds])
    assert [m.versions[0].reason for m in returned] == ["created"] * 3
    assert returned[0].metadata == {"agent_id": "a", "tags": ["p"], "1": None}


def test_a_reflection_returns_its_added_and_merged_memories_as_stored(store):
    user = uuid.uuid4().hex
    turns = log(store, user, texts=("a", "b", "c"))
    [target] = store.commit_reflection(user, "s", 0, 1, [new(user, "old", [turns[0].id])], [])
    merge = MergeInto(target.id, "merged", "merged", [turns[1].id], unit(2), "reflection",
                      speakers=["x"], session_ids=["s"])
    added = new(user, "added", [turns[2].id])
    returned = store.commit_reflection(user, "s", 1, 3, [added], [merge])
    assert [m.id for m in returned] == [added.memory.id, target.id]
    assert returned == store.memories(user, [added.memory.id, target.id])
    assert [v.reason for v in returned[1].versions] == ["created", "merged"]


def test_a_batch_failing_mid_way_writes_nothing(store):
    user, other = uuid.uuid4().hex, uuid.uuid4().hex
    first = new(user, "first", [])
    store.add_memories(user, [first], source="direct")
    taken = new(other, "another user's", [])
    store.add_memories(other, [taken], source="direct")
    generation = store.index_data(user).generation
    clash = NewMemory(Memory(id=taken.memory.id, user_id=user, text="c", key="c", refs=[]),
                      unit(2))  # memory ids are unique across users
    with pytest.raises(StorageError, match="(?i)unique|duplicate"):
        store.add_memories(user, [new(user, "b", []), clash], source="x")
    assert [m.text for m in store.memories(user)] == ["first"]
    assert store.index_data(user).generation == generation
    assert list(store.memory_vectors(user, [m.id for m in store.memories(user)])) == [
        first.memory.id]


def test_a_memory_added_again_with_its_id_is_left_as_it_is(store):
    """A repeated `add` (its ids made from its content) writes only what is new."""
    user = uuid.uuid4().hex
    first = new(user, "first", [])
    store.add_memories(user, [first], source="direct")
    again = NewMemory(Memory(id=first.memory.id, user_id=user, text="other", key="other",
                             refs=[]), unit(2))
    second = new(user, "second", [])
    assert [m.id for m in store.add_memories(user, [again, second], source="direct")] == [
        second.memory.id]
    assert [m.text for m in store.memories(user)] == ["first", "second"]
