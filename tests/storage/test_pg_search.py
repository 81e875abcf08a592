"""In-database search on PostgreSQL (`search_backend`): real server (pgserver), real embedder.

No LLM is involved: memories come from `add` (facts) and the LLM-free pipeline. The index
build tests hold a snapshot open on another connection, which a concurrent index build waits
for (as it would for any long transaction), to observe searches and writes during the build.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from backends import run_sql, split_target
from pydantic import ValidationError

from rmm_core import InvalidInputError, ReflectiveMemory, StorageError
from rmm_core.read import dbsearch
from rmm_core.storage.base import NewMemory
from rmm_core.storage.postgres.search import lexical_tiers
from rmm_core.types import Memory, new_memory_id

pytestmark = pytest.mark.backends
on_postgres = pytest.mark.parametrize("store_target", ["postgres"], indirect=True)

FACTS = {
    "dog": "I adopted a puppy named Rex last spring",
    "sister": "My sister lives in Lisbon and works as a nurse",
    "marathon": "I am training for the Berlin marathon in October",
    "house": "We bought an old house with a big garden",
    "piano": "I play jazz piano in a band on weekends",
    "food": "My favourite food is the salmon sushi from the place downtown",
}
QUERIES = {
    "dog": "what is the name of my dog",
    "sister": "where does my sister live",
    "marathon": "which race am I running this year",
    "house": "tell me about our home and garden",
    "piano": "what instrument do I play",
    "food": "what do I like to eat",
}

SEARCH_INDEXES = {"memories_by_lexemes", "memory_vectors_hnsw_384"}
"""What in-database search adds to the schema (for the test embedder's 384 dimensions)."""
SOON = 60.0
"""Seconds within which what must not wait for the index build completes."""


def _fill(mem: ReflectiveMemory, user: str = "u") -> dict[str, str]:
    """The facts as memories (topic → memory id), plus a two-speaker session."""
    ids = {topic: mem.add(text, user_id=user)[0].id for topic, text in FACTS.items()}
    mem.add_session([{"speaker": "user", "text": "I started a pottery class at the community "
                                                 "centre, shaping clay on the wheel"},
                     {"speaker": "assistant", "text": "Enjoy the wheel and the kiln!"}],
                    user_id=user)
    return ids


def loaded(mem: ReflectiveMemory) -> list[str]:
    """The users whose index this instance holds in its process cache."""
    return [k for k in mem._search.indexes.cache.keys() if k.startswith("index:")]


def _indexes(target: str) -> set[str]:
    import psycopg

    base, schema = split_target(target)
    with psycopg.connect(base) as conn:
        return {r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (schema,))}


@on_postgres
def test_database_search_ranks_the_relevant_memory_first_like_in_process(open_memory):
    ids = _fill(open_memory(search={"backend": "database"}))  # reflection reads the bank itself
    database = open_memory(search={"backend": "database"})
    process = open_memory(search={"backend": "process"})
    for topic, query in QUERIES.items():
        in_db = database.search(query, user_id="u", k=3)
        assert in_db.hits[0].memory.id == ids[topic], (query, in_db.hits[0].text)
        assert process.search(query, user_id="u", k=3).hits[0].memory.id == ids[topic]
    clay = database.search("what do I make out of clay", user_id="u", k=1).hits[0]
    assert "pottery" in clay.text
    assert clay.refs
    # searching loaded nothing into this instance: its in-process index cache stayed empty
    assert not loaded(database)
    assert loaded(process)


@on_postgres
def test_a_budget_the_window_leaves_unfilled_draws_deeper_in_the_database(open_memory):
    """60 short facts do not fill 1,000 words from the window's 20: the search draws deeper
    (memories it read already are not read again) and returns the head of `k=100`."""
    mem = open_memory(search={"backend": "database"})
    for n in range(60):
        mem.add(f"Jar {n} of plum jam sits on pantry shelf {n % 7}", user_id="u")
    budgeted = mem.search("which shelf holds my jam jars", user_id="u", max_words=1000).hits
    deep = mem.search("which shelf holds my jam jars", user_id="u", k=100).hits
    assert len(budgeted) > 20
    assert [(h.memory.id, h.text, h.score) for h in budgeted] == \
        [(h.memory.id, h.text, h.score) for h in deep[:len(budgeted)]]


@on_postgres
def test_filters_deletes_forget_and_users_are_applied_in_sql(open_memory):
    mem = open_memory(search={"backend": "database"})
    a = mem.add("I keep bees in the garden", user_id="u", agent_id="a", metadata={"n": 1})[0]
    b = mem.add("I keep bees on the roof", user_id="u", agent_id="b", metadata={"n": True})[0]
    c = mem.add("I keep bees at the farm", user_id="u", metadata={"n": 1.0})[0]
    mem.add("I keep bees at my cottage", user_id="other")
    ids = lambda **kw: {h.memory.id for h in mem.search("bees", user_id="u", k=10, **kw)}  # noqa: E731
    assert ids() == {a.id, b.id, c.id}
    assert ids(agent_id="a") == {a.id}
    assert ids(filters={"agent_id": ["a", "b"]}) == {a.id, b.id}
    assert ids(filters={"n": 1}) == {a.id, c.id}  # 1 == 1.0, but True is not 1
    assert ids(filters={"n": True}) == {b.id}
    assert ids(filters={"agent_id": "zzz"}) == set()
    mem.delete(a.id, user_id="u")
    assert ids() == {b.id, c.id}
    mem.forget(user_id="u")
    assert ids() == set()
    assert [h.text for h in mem.search("bees", user_id="other")]
    assert not loaded(mem)


@on_postgres
def test_search_indexes_are_created_on_open_of_an_existing_store_and_again_idempotently(
        open_memory, store_target):
    old = open_memory(search={"backend": "process"})  # a schema-5 store as the last release left it
    ids = _fill(old)
    old.close()
    run_sql(store_target, ["DROP INDEX IF EXISTS memories_by_lexemes",
                           "DROP INDEX IF EXISTS memory_vectors_hnsw_384"])
    assert not SEARCH_INDEXES & _indexes(store_target)
    mem = open_memory(search={"backend": "database"})
    assert SEARCH_INDEXES <= _indexes(store_target)
    assert mem.search(QUERIES["sister"], user_id="u").hits[0].memory.id == ids["sister"]
    again = open_memory(search={"backend": "database"})  # indexes present: nothing to do
    assert again.search(QUERIES["piano"], user_id="u").hits[0].memory.id == ids["piano"]
    new = again.add("I collect vintage fountain pens", user_id="u")[0]  # kept on write
    assert mem.search("fountain pens", user_id="u").hits[0].memory.id == new.id


def _validity(target: str) -> dict[str, bool]:
    """The schema's search indexes present → whether queries may use them."""
    import psycopg

    base, schema = split_target(target)
    with psycopg.connect(base) as conn:
        return dict(conn.execute(
            "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = "
            "i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
            "AND c.relname = ANY(%s)", (schema, list(SEARCH_INDEXES))).fetchall())


def _snapshot_held(target: str):
    """Another connection's open transaction with a snapshot: a concurrent index build waits
    for it to end before its index becomes valid."""
    import psycopg

    base, schema = split_target(target)
    conn = psycopg.connect(base)
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    conn.execute(f"SELECT COUNT(*) FROM {schema}.memories")
    return conn


def _until(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not {what} after {timeout} s"
        time.sleep(0.1)


def _soon(call: Callable[[], object]) -> object:
    """`call`'s result; fails if it takes more than `SOON` seconds."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(call).result(timeout=SOON)
    finally:
        pool.shutdown(wait=False)  # a call still waiting ends when the test lets it


def _database_searches(mem: ReflectiveMemory, monkeypatch) -> list[str]:
    """The users whose searches on `mem` run in the database from now on (appended)."""
    users: list[str] = []
    searcher = mem._search.database
    real = searcher.candidates

    def candidates(user_id, *args, **kwargs):
        users.append(user_id)
        return real(user_id, *args, **kwargs)

    monkeypatch.setattr(searcher, "candidates", candidates)
    return users


@on_postgres
def test_auto_builds_the_search_indexes_in_the_background_once_a_user_reaches_the_threshold(
        open_memory, store_target, monkeypatch):
    monkeypatch.setattr(dbsearch, "AUTO_MIN_MEMORIES", len(FACTS) + 1)
    mem = open_memory()  # auto
    ids = _fill(mem, "big")
    mem.add("I keep bees", user_id="small")
    writer = open_memory(search={"backend": "process"})  # another connection, as another server's
    in_db = _database_searches(mem, monkeypatch)
    # below the threshold writes maintain no search index and searches run in process
    assert mem.search("bees", user_id="small").hits
    assert "index:small" in loaded(mem)
    assert not SEARCH_INDEXES & _indexes(store_target)
    blocker = _snapshot_held(store_target)
    try:
        # the first search of a user at the threshold starts the build and does not wait
        found = _soon(lambda: mem.search(QUERIES["dog"], user_id="big"))
        assert found.hits[0].memory.id == ids["dog"]
        assert "index:big" in loaded(mem)
        _until(lambda: False in _validity(store_target).values(), "building")
        # writers go on during the build; searches stay in process
        new = _soon(lambda: writer.add("I collect fountain pens", user_id="big"))[0]
        assert mem.search("fountain pens", user_id="big").hits[0].memory.id == new.id
        assert not in_db
        assert not mem._search.database.ready
    finally:
        blocker.rollback()
        blocker.close()
    _until(lambda: mem._search.database.wanted("big"), "valid")
    assert _validity(store_target) == dict.fromkeys(SEARCH_INDEXES, True)
    assert mem.search(QUERIES["food"], user_id="big").hits[0].memory.id == ids["food"]
    assert mem.search("fountain pens", user_id="big").hits[0].memory.id == new.id
    assert in_db == ["big", "big"]
    other = open_memory()  # another instance finds them in place and loads no bank
    assert other.search(QUERIES["piano"], user_id="big").hits[0].memory.id == ids["piano"]
    assert not loaded(other)


@on_postgres
def test_closing_cancels_the_build_and_a_failed_one_leaves_search_in_process_until_rebuilt(
        open_memory, store_target, monkeypatch, caplog):
    monkeypatch.setattr(dbsearch, "AUTO_MIN_MEMORIES", len(FACTS) + 1)
    mem = open_memory()
    ids = _fill(mem, "big")
    blocker = _snapshot_held(store_target)
    try:
        assert mem.search(QUERIES["dog"], user_id="big").hits[0].memory.id == ids["dog"]
        _until(lambda: False in _validity(store_target).values(), "building")
        _soon(mem.close)  # cancels the build, which leaves its index invalid
        assert not mem.store._builder._thread.is_alive()
        assert False in _validity(store_target).values()
        # a build that fails (here: the server's statement timeout) warns; search goes on
        monkeypatch.setenv("PGOPTIONS", "-c statement_timeout=500")
        failing = open_memory()
        assert failing.search(QUERIES["sister"], user_id="big").hits[0].memory.id == ids[
            "sister"]
        _until(lambda: "building the search indexes failed" in caplog.text, "failed")
        assert failing.search(QUERIES["piano"], user_id="big").hits[0].memory.id == ids["piano"]
        assert not failing._search.database.ready
        assert "index:big" in loaded(failing)
    finally:
        blocker.rollback()
        blocker.close()
    monkeypatch.delenv("PGOPTIONS")
    # the next build drops the invalid index and builds it again
    again = open_memory(search={"backend": "database"})
    assert _validity(store_target) == dict.fromkeys(SEARCH_INDEXES, True)
    assert again.search(QUERIES["food"], user_id="big").hits[0].memory.id == ids["food"]


@on_postgres
def test_a_store_with_the_earlier_stored_full_text_column_moves_to_the_lexeme_index(
        open_memory, store_target):
    ids = _fill(open_memory(search={"backend": "process"}))
    run_sql(store_target, [  # as the previous release built it
        "ALTER TABLE memories ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
        "(to_tsvector('english', key)) STORED",
        "CREATE INDEX memories_tsv ON memories USING gin (tsv)"])
    mem = open_memory(search={"backend": "database"})
    assert SEARCH_INDEXES <= _indexes(store_target)
    assert "memories_tsv" not in _indexes(
        store_target)
    assert mem.search(QUERIES["sister"], user_id="u").hits[0].memory.id == ids["sister"]
    new = mem.add("I collect vintage fountain pens", user_id="u")[0]
    assert mem.search("fountain pens", user_id="u").hits[0].memory.id == new.id


def _lexemes(target: str) -> tuple[bool, int]:
    """Whether the memories have a lexemes column, and how many of them it leaves empty."""
    import psycopg

    base, schema = split_target(target)
    with psycopg.connect(base) as conn:
        if not conn.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = %s "
                            "AND table_name = 'memories' AND column_name = 'lexemes'",
                            (schema,)).fetchone():
            return False, 0
        return True, conn.execute(
            f"SELECT COUNT(*) FROM {schema}.memories WHERE lexemes IS NULL").fetchone()[0]


@on_postgres
def test_a_store_of_the_last_release_gets_a_filled_lexemes_column_and_its_index(
        open_memory, store_target):
    ids = _fill(open_memory(search={"backend": "process"}))
    run_sql(store_target, [  # as the last release left it: lexemes computed by an expression
        "DROP TRIGGER IF EXISTS memories_lexemes ON memories",
        "DROP FUNCTION IF EXISTS memories_lexemes()",
        "ALTER TABLE memories DROP COLUMN IF EXISTS lexemes",
        "CREATE INDEX memories_lexemes ON memories USING gin (to_tsvector('english', key))"])
    assert _lexemes(store_target) == (False, 0)
    mem = open_memory(search={"backend": "database"})
    assert _lexemes(store_target) == (True, 0)  # the rows written before it, filled
    assert SEARCH_INDEXES <= _indexes(store_target)
    assert "memories_lexemes" not in _indexes(store_target)
    assert mem.search(QUERIES["sister"], user_id="u").hits[0].memory.id == ids["sister"]
    new = mem.add("I collect vintage fountain pens", user_id="u")[0]  # filled by the server
    assert mem.search("fountain pens", user_id="u").hits[0].memory.id == new.id
    assert _lexemes(store_target) == (True, 0)


@on_postgres
def test_a_memory_whose_key_changes_gets_its_new_lexemes(open_memory, store_target):
    import psycopg

    mem = open_memory(search={"backend": "database"})
    ids = _fill(mem)
    mem.update(ids["piano"], "I play the cello in a string quartet", user_id="u")
    base, schema = split_target(store_target)
    with psycopg.connect(base) as conn:
        lexemes = conn.execute(f"SELECT lexemes::text FROM {schema}.memories WHERE id = %s",
                               (ids["piano"],)).fetchone()[0]
    assert "'cello'" in lexemes
    assert "'piano'" not in lexemes
    assert mem.search("cello quartet", user_id="u").hits[0].memory.id == ids["piano"]


@on_postgres
def test_instances_opening_at_once_create_the_search_indexes_once(open_memory, store_target):
    ids = _fill(open_memory(search={"backend": "process"}))
    assert not SEARCH_INDEXES & _indexes(store_target)
    with ThreadPoolExecutor(4) as pool:  # one connection each, as separate processes have
        mems = list(pool.map(lambda _: open_memory(search={"backend": "database"}), range(4)))
    assert SEARCH_INDEXES <= _indexes(store_target)
    for mem in mems:
        assert mem.search(QUERIES["piano"], user_id="u").hits[0].memory.id == ids["piano"]


@on_postgres
def test_another_process_searching_in_the_database_sees_writes_both_ways(open_memory,
                                                                         store_target):
    mem = open_memory(search={"backend": "database"})
    mem.add("My cat Miso sleeps on the bookshelf", user_id="u")
    child = textwrap.dedent("""
        import json, sys
        from rmm_core import ReflectiveMemory
        mem = ReflectiveMemory.open(sys.argv[1], search_backend="database")
        seen = mem.search("where does my cat sleep", user_id="u", k=1).hits[0].text
        mem.add("I grow chili peppers on the balcony", user_id="u")
        cached = [k for k in mem._search.indexes.cache.keys() if k.startswith("index:")]
        print(json.dumps({"seen": seen, "cached": len(cached)}))
    """)
    done = subprocess.run([sys.executable, "-c", child, store_target], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert "Miso" in out["seen"]
    assert out["cached"] == 0
    assert "chili" in mem.search("what grows on my balcony", user_id="u", k=1).hits[0].text


@pytest.mark.parametrize("store_target", ["sqlite"], indirect=True)
def test_search_backend_setting_is_validated(store_target, embedder):
    with pytest.raises(InvalidInputError, match="search.backend='database'"):
        ReflectiveMemory.open(store_target, embedder=embedder, search={"backend": "database"})
    with pytest.raises(ValidationError):
        ReflectiveMemory.open(store_target, embedder=embedder, search={"backend": "server"})
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:  # auto: in process
        mem.add("I keep bees", user_id="u")
        assert mem.search("bees", user_id="u").hits
        assert loaded(mem)


@on_postgres
def test_a_user_with_a_small_share_of_the_table_is_searched_exactly(open_memory, embedder):
    """pgvector filters an HNSW scan by user after the scan: when another user's vectors
    fill it, the search falls back to an exact scan of this user's vectors."""
    mem = open_memory(search={"backend": "database"})
    query = embedder.embed(["zebra stripes"])[0]
    rng = np.random.default_rng(0)
    crowd = query + 0.05 * rng.standard_normal((700, query.shape[0])).astype(np.float32)
    _add_with_vectors(mem, "crowd", [f"crowd note {i}" for i in range(700)], crowd)
    away = rng.standard_normal((3, query.shape[0])).astype(np.float32)
    mine = _add_with_vectors(mem, "me", ["my boat is blue", "I sail on Sundays",
                                         "the harbour is small"], away)
    # as on a table where the user's share is misjudged: the planner takes the HNSW order
    with mem.store._searching.held() as connections:
        for tx in connections:
            tx.run("SET enable_sort = off")
    assert {h.memory.id for h in mem.search("zebra stripes", user_id="me", k=3)} == set(mine)


def _add_with_vectors(mem: ReflectiveMemory, user: str, texts: list[str],
                      vectors: np.ndarray) -> list[str]:
    """Memories with the given own vectors, written straight into the store."""
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    adds = [NewMemory(Memory(id=new_memory_id(), user_id=user, text=t, key=t, refs=[]),
                      v[None, :])
            for t, v in zip(texts, vectors)]
    return [m.id for m in mem.store.add_memories(user, adds, source="direct")]


def test_the_lexical_shortlist_tries_memories_holding_several_common_words_first():
    common = dict.fromkeys(["paint", "hike", "sushi", "garden", "dog", "tea"], 0.15)
    tiers = lexical_tiers({**common, "zebra": None}, bank=100_000, want=2000)
    # 4.7% of the bank holds 3 of 6 words that each 15% hold (enough), 0.6% holds 4 (not)
    assert [t.count("&") for t in tiers] == [2 * 20, 1 * 15, 0]
    assert all("'zebra'" in t for t in tiers)
    assert tiers[-1].count("|") == 6
    assert lexical_tiers({"zebra": None, "okapi": 0.001}, bank=100_000, want=2000) == [
        "'zebra' | 'okapi'"]
    assert lexical_tiers({}, bank=10, want=5) == []


@on_postgres
def test_the_lexical_signal_is_bm25_over_the_users_bank(open_memory, embedder):
    """Lucene's idf from the user's own counts, term frequency from the tsvector's positions,
    distinct lexemes as a memory's length: a rare word outweighs a common one."""
    mem = open_memory(search={"backend": "database"})
    texts = ["zebra garden zebra", "garden party", "garden tools shed", "quiet morning walk"]
    ids = _add_with_vectors(mem, "u", texts, np.eye(4, 384, dtype=np.float32) + 0.01)
    _add_with_vectors(mem, "other", ["zebra zebra"] * 3, np.ones((3, 384), np.float32))
    sample = mem.store.search_sample("u", 10)
    lengths, avg = [2, 2, 3, 3], 2.5
    assert sample.avg_length == pytest.approx(avg)
    words = mem.store.search_terms("u", ["zebra", "garden"], 4, sample.avg_length)
    query = embedder.embed(["zebra garden"])[0]
    got = {r.id: r.lexical for r in mem.store.search_shortlist(
        "u", words, query, {}, dense=4, lexical=4, expected=4)}
    idf = {df: math.log(1 + (4 - df + 0.5) / (df + 0.5)) for df in (1, 3)}
    norm = [1.5 * (0.25 + 0.75 * n / avg) for n in lengths]
    want = [idf[1] * 2 / (2 + norm[0]) + idf[3] / (1 + norm[0]), idf[3] / (1 + norm[1]),
            idf[3] / (1 + norm[2]), 0.0]
    assert [got[i] for i in ids] == pytest.approx(want, rel=1e-5)
    # the sample's signals, computed in the process, are the same BM25
    assert sorted(sample.signals(words, query)[:, 0]) == pytest.approx(sorted(want), rel=1e-5)


@on_postgres
def test_the_sample_is_read_once_per_bank_change_and_scored_in_the_process(open_memory,
                                                                           monkeypatch):
    """A search z-scores its signals over a sample of the bank that the process keeps per
    bank generation: no SQL for it per search, a write makes the next search read it again."""
    mem = open_memory(search={"backend": "database"})
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((5, 3, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
    adds = [NewMemory(Memory(id=new_memory_id(), user_id="u", text=t, key=t, refs=[]), v)
            for t, v in zip(FACTS.values(), vectors)]
    mem.store.add_memories("u", adds, source="direct")
    reads: list[str] = []
    real = mem.store.search_sample
    monkeypatch.setattr(mem.store, "search_sample",
                        lambda user, size: reads.append(user) or real(user, size))
    assert mem.search("marathon", user_id="u").hits
    mem.search("sister", user_id="u")
    assert reads == ["u"]
    added = mem.add("I collect vintage fountain pens", user_id="u")[0]
    assert mem.search("fountain pens", user_id="u").hits[0].memory.id == added.id
    assert reads == ["u", "u"]
    sample = real("u", 10)
    words = mem.store.search_terms("u", ["pen"], 6, sample.avg_length)
    query = vectors[2, 1]  # a turn vector of the third memory
    signals = sample.signals(words, query)
    assert len(signals) == 6
    assert (signals[:, 0] > 0).sum() == 1
    # own-vector and best-turn cosines of the five memories written with their vectors
    unit, turn = vectors[:, 0] @ query, (vectors[:, 1:] @ query).max(axis=1)
    assert signals[:5, 1] == pytest.approx(unit, abs=2e-3)
    assert signals[:5, 2] == pytest.approx(turn, abs=2e-3)


@on_postgres
def test_forget_leaves_no_sample_of_the_users_bank_in_the_process(open_memory):
    """The sample a process keeps to z-score in-database signals holds the bank's vectors
    and lexemes: it lives in the `cache_bytes` budget and goes with `forget`."""
    mem = open_memory(search={"backend": "database"})
    for text in FACTS.values():
        mem.add(text, user_id="u")
    assert mem.search("marathon", user_id="u").hits
    assert "sample:u" in mem._search.indexes.cache
    mem.forget(user_id="u")
    assert "sample:u" not in mem._search.indexes.cache


@on_postgres
def test_the_pool_links_same_session_neighbours_across_a_deleted_memorys_gap(open_memory,
                                                                              embedder):
    """A pooled memory's previous and next memory in the user's order count as neighbours
    when of its session: found by `seq` ± 1, or past the gap a deleted memory left; a
    neighbour outside the pool comes with its own signals."""
    mem = open_memory(search={"backend": "database"})
    sessions = ["s1", "s1", "s1", "s2", "s2", "s3"]
    texts = [f"note {i} about the garden" for i in range(len(sessions))]
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((len(texts), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    adds = [NewMemory(Memory(id=new_memory_id(), user_id="u", text=t, key=t, refs=[],
                             session_ids=[s]), v[None, :])
            for t, s, v in zip(texts, sessions, vectors)]
    ids = [m.id for m in mem.store.add_memories("u", adds, source="direct")]
    _add_with_vectors(mem, "other", ["note about the garden"] * 3, vectors[:3])
    mem.delete(ids[1], user_id="u")  # s1: 0, (1 deleted), 2; s2: 3, 4; s3: 5
    words = mem.store.search_terms("u", ["garden"], 5, 4.0)
    links, extra = mem.store.search_pool("u", [ids[0], ids[2], ids[3], ids[5]], words,
                                         vectors[4], {})
    assert links == {ids[0]: (None, ids[2]), ids[2]: (ids[0], None),
                     ids[3]: (None, ids[4]), ids[5]: (None, None)}
    [neighbour] = extra
    assert neighbour.id == ids[4]
    assert neighbour.unit == pytest.approx(1.0, abs=1e-5)
    assert neighbour.turn == neighbour.unit
    assert neighbour.lexical > 0


@on_postgres
def test_a_memory_deleted_between_the_shortlists_keeps_the_signals_its_list_saw(
        open_memory, embedder, monkeypatch):
    """Each shortlist statement computes its own rows' three signals: a memory that the
    nearest-vector list found and a write deleted before the full-text list ran keeps its
    lexical score (it was scored 0 when a later statement looked its score up)."""
    from rmm_core.storage.postgres.tx import PgTx

    mem = open_memory(search={"backend": "database"})
    writer = open_memory(search={"backend": "process"})
    texts = ["zebra garden zebra", "garden party", "garden tools shed", "quiet morning walk"]
    query = embedder.embed(["zebra garden"])[0]
    vectors = np.eye(4, 384, dtype=np.float32) + 0.01
    vectors[0] = query  # the first memory is the query's nearest
    ids = _add_with_vectors(mem, "u", texts, vectors)
    words = mem.store.search_terms("u", ["zebra", "garden"], 4, 2.5)
    expected = {r.id: r for r in mem.store.search_shortlist(
        "u", words, query, {}, dense=1, lexical=4, expected=4)}
    real, deleted = PgTx.all, []

    def all_then_delete(self, sql, params=()):
        rows = real(self, sql, params)
        if "ORDER BY v.vec" in sql and not deleted:  # committed before the other list's
            deleted.append(writer.delete(ids[0], user_id="u"))
        return rows

    def one_after_the_other(pair, first, second):  # the nearest list first, then the other
        near = second(pair[1])
        return first(pair[0]), near

    monkeypatch.setattr(PgTx, "all", all_then_delete)
    monkeypatch.setattr(mem.store._searching, "at_once", one_after_the_other)
    got = {r.id: r for r in mem.store.search_shortlist(
        "u", words, query, {}, dense=1, lexical=4, expected=4)}
    assert deleted
    assert expected[ids[0]].lexical > 0
    assert got[ids[0]].lexical == pytest.approx(expected[ids[0]].lexical)
    assert (got[ids[0]].unit, got[ids[0]].turn) == pytest.approx((1.0, 1.0), abs=1e-4)


@on_postgres
def test_searches_have_their_own_connections_reopened_after_a_broken_link(open_memory,
                                                                          store_target):
    """A search runs on two connections of its own (not the store's, which writes hold);
    one the server dropped fails that search with `StorageError` and is opened again by the
    next; `close` closes them."""
    import psycopg

    mem = open_memory(search={"backend": "database"})
    ids = _fill(mem)
    assert mem.search(QUERIES["dog"], user_id="u").hits[0].memory.id == ids["dog"]
    searching = mem.store._searching._conns
    pids = {conn.info.backend_pid for conn in searching}
    assert len(pids) == 2
    assert mem.store._conn.info.backend_pid not in pids
    with psycopg.connect(split_target(store_target)[0], autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) pid",
                      (list(pids),))
    with pytest.raises(StorageError):
        mem.search(QUERIES["sister"], user_id="u")
    assert mem.search(QUERIES["sister"], user_id="u").hits[0].memory.id == ids["sister"]
    reopened = list(mem.store._searching._conns)  # both: either could have been broken
    assert not pids & {conn.info.backend_pid for conn in reopened}
    mem.close()
    assert all(conn.closed for conn in reopened)
