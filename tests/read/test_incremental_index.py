"""Incremental indexes: a cached index takes a change without a rebuild and then ranks
exactly as an index built afresh from the store; the store's change log; the byte-bounded
cache; the approximate index trained once per size class.

Everything runs on a real SQLite file (the change log on PostgreSQL too) with the real
embedder and the LLM-free pipeline; the approximate-index tests fill banks with random
vectors, since what they check (training counts, removal, the shortlist) does not depend
on what the vectors mean. No test uses a fake LLM.
"""

from __future__ import annotations

import numpy as np
import pytest
from backends import run_sql

import rmm_core.read.index as index_module
from rmm_core import ReflectiveMemory, Turn
from rmm_core.read.ann import Ann, size_class
from rmm_core.read.index import UserIndex
from rmm_core.storage import open_store
from rmm_core.storage.base import SCHEMA_VERSION, NewMemory
from rmm_core.types import Memory, new_memory_id

NAMES = ["Mia", "Omar", "Lena", "Tomas", "Aiko", "Priya"]
TOPICS = ["started pottery classes on Tuesdays", "adopted a grey kitten called Pixel",
          "is training for the Berlin marathon", "moved to a flat near the river",
          "plays the cello in a small orchestra", "is saving money for a trip to Peru",
          "grows tomatoes and basil on the balcony", "switched jobs to a bakery downtown"]
QUERIES = ["Who adopted a kitten?", "marathon training", "Where did they move?",
           "What instrument does someone play?", "trip to Peru", "bakery job", "tomatoes"]


def session(i: int) -> list[Turn]:
    name = NAMES[i % len(NAMES)]
    return [Turn("user", f"My friend {name} {TOPICS[i % len(TOPICS)]}.", f"s{i}:1"),
            Turn("assistant", f"That sounds lovely for {name}.", f"s{i}:2"),
            Turn("user", f"Also, {NAMES[(i + 2) % len(NAMES)]} "
                         f"{TOPICS[(i + 3) % len(TOPICS)]} since {2015 + i}.", f"s{i}:3"),
            Turn("assistant", "Good to know, I will remember it.", f"s{i}:4")]


def ranked(index: UserIndex, mem: ReflectiveMemory, query: str, **kw) -> tuple[list, np.ndarray]:
    vec = mem.embedder.embed([query])[0]
    found = index.search(query, vec, top=20, weights=mem._search.weights, **kw)
    return [index.ids[p] for p in found.positions], found.fused


def assert_same_as_rebuild(mem: ReflectiveMemory, user: str) -> UserIndex:
    """The cached index ranks, scores and finds neighbours as one built afresh."""
    cached = mem._search.indexes.get(user)
    fresh = UserIndex(mem.store.index_data(user), mem._search.indexes.stemmer)
    assert cached.generation == fresh.generation
    assert cached.ids == fresh.ids
    assert cached.metadata == fresh.metadata
    for query in QUERIES:
        assert_same_ranking(*ranked(cached, mem, query), *ranked(fresh, mem, query))
        assert np.array_equal(cached.lexical_scores(query), fresh.lexical_scores(query))
        vec = mem.embedder.embed([query])[0]
        assert_same_near(cached, fresh, vec, 12)
        for p in range(len(cached)):
            assert np.array_equal(cached.rows_of(p), fresh.rows_of(fresh.ids.index(
                cached.ids[p])))
    subset = np.arange(0, len(cached), 2)
    if len(subset):
        assert_same_ranking(*ranked(cached, mem, QUERIES[0], subset=subset),
                            *ranked(fresh, mem, QUERIES[0], subset=subset))
    return cached


def assert_same_near(cached: UserIndex, fresh: UserIndex, vec: np.ndarray, depth: int,
                     tol: float = 1e-5) -> None:
    """`dense_scores` gives the memories of the top `depth` vector rows: the same memories
    with the same scores, except that rows tied (up to rounding) at the cut may belong to a
    memory already listed in one index and to another memory in the other, so one list may
    end with memories scored at the cut that the other lacks."""
    near = {cached.ids[p]: s for p, s in cached.dense_scores(vec, depth).items()}
    want = {fresh.ids[p]: s for p, s in fresh.dense_scores(vec, depth).items()}
    n = min(len(near), len(want))
    assert_same_ranking(list(near)[:n], list(near.values())[:n], list(want)[:n],
                        list(want.values())[:n], tol)
    longer = near if len(near) > n else want
    if len(longer) > n:
        owners = fresh._position[fresh._chain.row_slot[:fresh._n_rows]]
        sims = np.sort((fresh._vectors.rows @ vec)[owners >= 0])[::-1]
        cut = sims[min(depth, len(sims)) - 1]
        np.testing.assert_allclose(list(longer.values())[n:], cut, rtol=tol, atol=tol)


def assert_same_ranking(ids: list, scores, want_ids: list, want, tol: float = 1e-5) -> None:
    """The same scores rank by rank, and the same ids, except that memories whose scores
    differ by float rounding alone (a memory said twice has the same vectors; a dot product
    may differ in its last bit with the row's place in the matrix) may swap places."""
    scores, want = np.asarray(scores, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert len(ids) == len(want_ids)
    np.testing.assert_allclose(scores, want, rtol=tol, atol=tol)
    start = 0
    for end in range(1, len(ids) + 1):  # groups of equal scores (up to rounding)
        if end == len(ids) or abs(want[end] - want[end - 1]) > tol:
            if end < len(ids):  # the last group may be cut at a different tie
                assert set(ids[start:end]) == set(want_ids[start:end])
            start = end


def test_every_change_reaches_the_cached_index_as_a_rebuild_would(tmp_path, embedder):
    mem = ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder)
    user = "u"
    mem.add_session(session(0), user_id=user, session_id="s0")
    chain = assert_same_as_rebuild(mem, user)._chain
    steps = [
        lambda i: mem.add_session(session(i), user_id=user, session_id=f"s{i}"),
        lambda i: mem.add(f"I am allergic to peanuts number {i}.", user_id=user,
                          metadata={"kind": "health"}),
        lambda i: mem.update(mem.memories(user_id=user)[1].id, f"Pixel the kitten is {i}.",
                             user_id=user),
        lambda i: mem.delete(mem.memories(user_id=user)[0].id, user_id=user),
        lambda i: (mem.append(session(i)[:2], user_id=user, session_id=f"s{i}"),
                   mem.end_session(user_id=user, session_id=f"s{i}")),
        lambda i: mem.add_session(session(i - 8), user_id=user, session_id=f"again{i}"),
    ]
    for i in range(1, 19):
        steps[i % len(steps)](i)
        index = assert_same_as_rebuild(mem, user)
        assert index._chain is chain  # brought up to date, never rebuilt
    # a fresh process (a cold index) answers the whole search path the same way
    again = ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder)
    for query in QUERIES:
        got = [(h.memory.id, round(h.score, 5)) for h in mem.search(query, user_id=user, k=8)]
        want = [(h.memory.id, round(h.score, 5))
                for h in again.search(query, user_id=user, k=8)]
        assert got == want
    again.close()
    mem.forget(user_id=user)
    mem.add_session(session(3), user_id=user, session_id="after")
    assert assert_same_as_rebuild(mem, user)._chain is not chain
    mem.close()


def test_reflection_uses_the_index_without_rebuilding_it(tmp_path, embedder, monkeypatch):
    """Each session's reflection looks up neighbours in the index: one full build in all."""
    builds = []
    real = UserIndex.__init__

    def counted(self, *args, **kw):
        builds.append(1)
        real(self, *args, **kw)

    monkeypatch.setattr(UserIndex, "__init__", counted)
    mem = ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder)
    for i in range(8):
        mem.add_session(session(i), user_id="u", session_id=f"s{i}")
        mem.search(QUERIES[i % len(QUERIES)], user_id="u")
    assert len(builds) == 1
    mem.close()


@pytest.mark.backends
def test_the_store_says_what_changed_since_a_generation(store_target, embedder):
    mem = ReflectiveMemory.open(store_target, embedder=embedder)
    store = mem.store
    [fact] = mem.add("I keep bees in the garden.", user_id="u")
    first = store.generation("u")
    mem.add_session(session(1), user_id="u", session_id="s1")
    mem.update(fact.id, "I keep bees and chickens.", user_id="u")
    [other] = mem.add("I like rye bread.", user_id="u")
    mem.delete(other.id, user_id="u")
    delta = store.index_changes("u", first)
    changed = set(delta.data.ids)
    assert fact.id in changed
    assert other.id not in changed
    assert delta.removed == [other.id]
    assert changed == {m.id for m in mem.memories(user_id="u")}
    assert delta.data.generation == store.generation("u")
    assert delta.data.seqs == sorted(delta.data.seqs)
    assert len(delta.data.owner) == len(delta.data.vectors)
    assert store.index_changes("u", store.generation("u")).data.ids == []
    assert store.index_changes("u", 12345) is None  # a generation the log never held
    assert store.index_changes("nobody", 0).data.ids == []
    assert set(store.index_changes("u", 0).data.ids) == changed  # from an empty bank
    mem.forget(user_id="u")
    assert store.index_changes("u", first) is None
    mem.close()


@pytest.mark.backends
def test_a_schema_5_store_gains_the_change_log_on_open(store_target, embedder):
    mem = ReflectiveMemory.open(store_target, embedder=embedder)
    mem.add_session(session(0), user_id="u", session_id="s0")
    mem.close()
    run_sql(store_target, ["DROP TABLE memory_changes",
                           "UPDATE meta SET value = '5' WHERE key = 'schema_version'"])
    assert SCHEMA_VERSION == 7  # schema 7 added a column, which this store already has
    mem = ReflectiveMemory.open(store_target, embedder=embedder)
    before = mem._search.indexes.get("u")
    assert mem.store.index_changes("u", before.generation).data.ids == []
    mem.add_session(session(1), user_id="u", session_id="s1")
    # the log starts with the first change after the migration: a generation from before it
    # cannot be diffed, so that index is built once more; later ones are brought up to date
    assert mem.store.index_changes("u", before.generation) is None
    first = assert_same_as_rebuild(mem, "u")
    mem.add_session(session(2), user_id="u", session_id="s2")
    after = assert_same_as_rebuild(mem, "u")
    assert after._chain is first._chain
    assert len(after) > len(first)
    mem.close()
    store = open_store(store_target)
    assert store.index_changes("u", after.generation) is not None
    store.close()


def test_the_cache_keeps_its_byte_bound_and_evicted_users_search_as_before(tmp_path,
                                                                            embedder):
    probe = ReflectiveMemory.open(str(tmp_path / "probe.sqlite"), embedder=embedder)
    probe.add_session(session(0), user_id="p", session_id="s")
    one = probe._search.indexes.get("p").nbytes
    probe.close()
    bound = 3 * one + one // 2  # about three users' indexes
    mem = ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder,
                                storage={"cache_bytes": bound})
    users = [f"user{i}" for i in range(30)]
    first = {}
    for i, user in enumerate(users):
        mem.add_session(session(i), user_id=user, session_id="s")
        first[user] = [(h.memory.id, h.score) for h in mem.search(QUERIES[i % 7], user_id=user)]
        assert mem._search.indexes.cache.nbytes <= bound
    assert len(mem._search.indexes.cache) <= 4
    for i, user in enumerate(users):
        again = [(h.memory.id, h.score) for h in mem.search(QUERIES[i % 7], user_id=user)]
        assert again == first[user]
        assert mem._search.indexes.cache.nbytes <= bound
    mem.close()


def test_index_bytes_are_what_it_allocates(tmp_path, embedder):
    """`nbytes` (what the cache counts) is within a factor of two of what reading and
    building the index allocates, measured by tracemalloc (the index keeps the vectors the
    store read)."""
    import tracemalloc

    store = open_store(str(tmp_path / "m.sqlite"))
    fill(store, "u", 3000, dim=embedder.dim)
    tracemalloc.start()
    index = UserIndex(store.index_data("u"))
    index.search("word3 word7", index.rows_of(0)[0], top=20)
    allocated = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert allocated / 2 <= index.nbytes <= 2 * allocated, (index.nbytes, allocated)
    store.close()


def fill(store, user: str, n: int, *, dim: int, seed: int = 0) -> list[str]:
    """`n` memories with random unit vectors (own + one turn row) straight into the store."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, 2, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
    adds = [NewMemory(Memory(id=new_memory_id(), user_id=user,
                             text=f"word{i % 50} word{i % 7} note {i}",
                             key=f"word{i % 50} word{i % 7} note {i}", refs=[]), v)
            for i, v in enumerate(vectors)]
    store.add_memories(user, adds, source="direct")
    return [a.memory.id for a in adds]


def test_the_approximate_index_is_trained_once_per_size_class(tmp_path, embedder,
                                                              monkeypatch):
    monkeypatch.setattr(index_module, "EXACT_LIMIT", 1000)
    mem = ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder)
    ids = fill(mem.store, "u", 4090, dim=embedder.dim)
    assert size_class(4090) == 5
    assert size_class(4096) == 6
    start = Ann.trainings
    query = "I bought zeppelin airship tickets."  # the fact itself: in the list it probes
    vec = embedder.embed([query])[0]
    mem._search.indexes.get("u").dense_scores(vec, 10)
    assert Ann.trainings == start + 1
    [fact] = mem.add(query, user_id="u")
    mem.delete(ids[0], user_id="u")
    index = mem._search.indexes.get("u")
    near = index.dense_scores(vec, 10)
    assert index.ids[next(iter(near))] == fact.id  # the new memory is in the shortlist
    assert ids[0] not in index.ids
    assert Ann.trainings == start + 1
    for i in range(8):  # past 4,096 memories: the next size class, trained once
        mem.add(f"another fact {i} about gardening", user_id="u")
    index = mem._search.indexes.get("u")
    assert size_class(len(index)) == 6
    index.dense_scores(vec, 10)
    index.dense_scores(vec, 10)
    assert Ann.trainings == start + 2
    # a rebuild in the same size class (a fresh index of the same user) reuses the training
    rebuilt = UserIndex(mem.store.index_data("u"), mem._search.indexes.stemmer, trained=index)
    rebuilt.dense_scores(vec, 10)
    assert Ann.trainings == start + 2
    assert list(rebuilt.dense_scores(vec, 10)) == list(index.dense_scores(vec, 10))
    mem.close()


def test_a_shared_cache_tells_each_owner_of_its_evicted_values():
    from rmm_core.lru import ByteLRU

    lru: ByteLRU[str] = ByteLRU(10)
    told = []
    lru.put("weights", "W", 4, on_evict=lambda key, value: told.append((key, value)))
    lru.put("index:a", "I", 4)
    assert lru.put("index:b", "J", 4) == ["weights"]
    assert told == [("weights", "W")]
    assert lru.keys() == ["index:a", "index:b"]
    assert lru.nbytes == 8
