"""The reranker under hostile data and load: a non-finite step is refused (one user's NaN
vectors cannot poison the weights every user ranks by), compaction folds each claimed step
exactly once under threads and processes, and per-user weights stay within a byte bound.

Real SQLite files throughout, with the real embedder for the front-door tests; one test wraps
that embedder so that one query comes back as NaN; the compaction tests log synthetic
rank-one steps of dimension 4.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from rmm_core import FeedbackError, ReflectiveMemory
from rmm_core.learn.rerank import LowRank, Weights, WeightStore, delta_to_bytes
from rmm_core.lru import ByteLRU
from rmm_core.storage.sqlite import SQLiteStore

GLOBAL = "reranker/global"
TEXTS = ["I adopted a puppy called Rex and we walk by the river.",
         "My sister is getting married in Lisbon next June.",
         "I started learning the cello last autumn.",
         "We repainted the kitchen a pale green colour."]


def ingest(mem: ReflectiveMemory, user: str, n: int = 4) -> None:
    """`n` one-turn sessions; the default segmenter makes a memory of each."""
    for i in range(n):
        mem.add_session([{"speaker": "user", "text": TEXTS[i % len(TEXTS)]}], user_id=user,
                        session_id=f"s{i}")


def scores(mem: ReflectiveMemory, user: str, query: str = "what pet do I have?"):
    return [(h.memory.id, h.score) for h in mem.search(query, user_id=user, k=3)]


def assert_finite(mem: ReflectiveMemory) -> None:
    assert mem.reranker.weights_for("", mem.embedder.dim).is_finite()


# non-finite steps ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["features", "rmm"])
def test_nan_memory_vectors_cannot_poison_the_global_reranker(open_memory, store_target, kind):
    mem = open_memory(reranker={"kind": kind})
    name = mem.reranker.state_name("")
    ingest(mem, "good")
    ingest(mem, "bad")
    res = mem.search("what pet do I have?", user_id="good", k=3)
    mem.feedback(res, cited=[res[0].memory.id])  # the shared weights hold one real step
    before = scores(mem, "good")
    mem.close()
    nan = np.full(mem.embedder.dim, np.nan, np.float32).tobytes()
    with sqlite3.connect(store_target) as conn:  # as a crafted import would have left them
        conn.execute("UPDATE memory_vectors SET vec = ? WHERE user_id = 'bad'", (nan,))
    mem = open_memory(reranker={"kind": kind})
    res = mem.search("what pet do I have?", user_id="bad", k=3)
    with pytest.raises(FeedbackError, match="not finite"):
        mem.feedback(res, cited=[res[0].memory.id])
    assert len(mem.store.state_log(name)[1]) == 1  # nothing logged
    assert mem.store.claim_feedback(res.id, "bad")  # nor the result used up
    assert_finite(mem)
    assert scores(mem, "good") == before
    assert all(np.isfinite(s) for _, s in before)


class NaNQueries:
    """The real embedder, except that the text "poison" embeds to NaN."""

    def __init__(self, inner) -> None:
        self.inner, self.dim, self.name = inner, inner.dim, inner.name

    def embed(self, texts):
        out = self.inner.embed(texts)
        out[[t == "poison" for t in texts]] = np.nan
        return out


@pytest.mark.parametrize("kind", ["features", "rmm"])
def test_a_nan_query_vector_is_refused_and_other_users_rank_as_before(store_target, embedder,
                                                                      kind):
    with ReflectiveMemory.open(store_target, embedder=NaNQueries(embedder),
                               reranker={"kind": kind}) as mem:
        ingest(mem, "u1")
        ingest(mem, "u2")
        before = scores(mem, "u2")
        res = mem.search("poison", user_id="u1", k=3, explore=True)
        with pytest.raises(FeedbackError, match="not finite"):
            mem.feedback(res, cited=[])
        assert mem.store.state_log(mem.reranker.state_name("")) == (0, [])
        assert_finite(mem)
        assert scores(mem, "u2") == before


def test_respond_keeps_its_answer_when_the_learning_step_is_refused(store_target, embedder):
    """The LLM answered; a refused REINFORCE step (NaN query vector) costs the learning only.
    Uses a scripted fake LLM (a callable) that cites note 1."""
    with ReflectiveMemory.open(store_target, embedder=NaNQueries(embedder),
                               llm=lambda prompt: "You adopted a puppy [1].",
                               segmentation={"kind": "embedding"},
                               stages={"extraction": "segment", "reconciliation": "threshold"},
                               reranker={"kind": "rmm"}) as mem:
        ingest(mem, "u1")
        with pytest.warns(RuntimeWarning, match="not finite"):
            answer = mem.respond("poison", user_id="u1")
        assert answer.answer.startswith("You adopted a puppy")
        assert len(answer.cited) == 1
        assert mem.store.state_log(GLOBAL) == (0, [])
        assert_finite(mem)


def test_non_finite_state_written_before_the_check_is_not_used(tmp_path):
    """A store poisoned by older code: a NaN step is ignored (the finite ones count) and a
    NaN base is replaced by zeros, each with a warning; nothing NaN reaches a ranking."""
    store = SQLiteStore(str(tmp_path / "w.sqlite"))
    good = LowRank.outer(np.ones(4), np.ones(4))
    bad = LowRank.outer(np.full(4, np.nan), np.ones(4))
    store.append_state_delta(GLOBAL, delta_to_bytes(good, good, 1))
    store.append_state_delta(GLOBAL, delta_to_bytes(bad, good, 1))
    with pytest.warns(RuntimeWarning, match="not finite"):
        weights = WeightStore(store).load(GLOBAL, 4)
    assert weights.is_finite()
    assert weights.steps == 1
    assert np.array_equal(weights.w_q, np.ones((4, 4)))

    assert store.save_state("reranker/other", 0, Weights(np.full((4, 4), np.nan, np.float32),
                                                         np.zeros((4, 4), np.float32),
                                                         5).to_bytes())
    with pytest.warns(RuntimeWarning, match="starting again from the initial"):
        weights = WeightStore(store).load("reranker/other", 4)
    assert weights.is_finite()
    assert not weights.w_q.any()
    store.close()


def test_a_step_that_would_overflow_the_weights_is_refused(tmp_path):
    store = SQLiteStore(str(tmp_path / "w.sqlite"))
    weights = WeightStore(store, learning_rate=1.0)
    big = (LowRank.outer(np.full(4, 2e19), np.full(4, 1e19)),  # an update of -2e38, finite
           LowRank.outer(np.ones(4), np.ones(4)))
    weights.add(GLOBAL, big)
    assert weights.load(GLOBAL, 4).is_finite()
    with pytest.raises(FeedbackError, match="not finite"):  # -4e38 overflows float32
        weights.add(GLOBAL, big)
    assert len(store.state_log(GLOBAL)[1]) == 1
    store.close()


# compaction under threads --------------------------------------------------------------------
def step(value: float) -> tuple[LowRank, LowRank]:
    return LowRank.outer(np.full(4, value), np.ones(4)), LowRank.outer(np.ones(4), np.ones(4))


def after_fold_read(action: Callable[[], None]) -> Callable:
    """A trace function (`sys.settrace`) that runs `action` the moment compaction has read
    the weights it will fold (`load` returns inside `compact`; `_snapshot` since the fix)."""

    def on_return(frame, event, arg):
        if event == "return":
            action()
        return on_return

    def tracer(frame, event, arg):
        caller = frame.f_back.f_code.co_name if frame.f_back else ""
        if event == "call" and caller == "compact" and \
                frame.f_code.co_name in ("load", "_snapshot"):
            return on_return
        return None

    return tracer


def test_a_load_between_reading_and_folding_the_weights_loses_no_step(tmp_path):
    """Forced interleaving: compaction pauses right after it read the weights to fold; another
    thread logs a fourth step and loads (replacing the cached weights); compaction resumes.
    Each of the four claimed steps must be in the weights exactly once (before the fix: 3)."""
    store = SQLiteStore(str(tmp_path / "w.sqlite"))
    weights = WeightStore(store, compact_every=1000)  # compaction only when called
    for i in range(3):
        assert weights.add_for_result(GLOBAL, step(i + 1), f"r{i}", "u")
    paused, resume = threading.Event(), threading.Event()

    def pause() -> None:
        paused.set()
        assert resume.wait(30)

    def compact() -> None:
        sys.settrace(after_fold_read(pause))
        try:
            weights.compact(GLOBAL, 4)
        finally:
            sys.settrace(None)

    folder = threading.Thread(target=compact)
    folder.start()
    assert paused.wait(30)
    assert weights.add_for_result(GLOBAL, step(4), "r3", "u")
    weights.load(GLOBAL, 4)
    resume.set()
    folder.join(30)
    final = WeightStore(store).load(GLOBAL, 4)
    store.close()
    assert final.steps == 4
    np.testing.assert_allclose(final.w_q, np.full((4, 4), -1e-3 * (1 + 2 + 3 + 4)), rtol=1e-5)


def _feedback_threads(path: str, seed: int, threads: int, steps: int) -> None:
    """One process: `threads` threads share one WeightStore (as one ReflectiveMemory's
    searches and feedback do), each claiming `steps` results and reading the weights. Each
    compaction sleeps 2 ms after reading what it folds, so that other threads act in between
    (CPython never switches threads there by itself)."""
    store = SQLiteStore(path)
    weights = WeightStore(store, compact_every=2)  # compactions race with steps and reads

    def work(thread: int) -> None:
        sys.settrace(after_fold_read(lambda: time.sleep(0.002)))
        for i in range(steps):
            weights.add_for_result(GLOBAL, step(seed), f"{seed}-{thread}-{i}", "u")
            weights.load(GLOBAL, 4)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    store.close()


def test_threads_and_processes_fold_every_claimed_step_exactly_once(tmp_path):
    path = str(tmp_path / "w.sqlite")
    SQLiteStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_feedback_threads, args=(path, seed, 6, 20)) for seed in (1, 2)]
    for proc in procs:
        proc.start()
    _feedback_threads(path, 3, 6, 20)
    for proc in procs:
        proc.join(timeout=120)
    assert all(proc.exitcode == 0 for proc in procs)
    store = SQLiteStore(path)
    final = WeightStore(store).load(GLOBAL, 4)
    with sqlite3.connect(path) as conn:
        claims = conn.execute("SELECT COUNT(*) FROM feedback_log").fetchone()[0]
    version = store.state_log(GLOBAL)[0]
    store.close()
    assert claims == 3 * 6 * 20
    assert version > 10
    assert final.steps == claims
    np.testing.assert_allclose(final.w_q, np.full((4, 4), -1e-3 * 6 * 20 * (1 + 2 + 3)),
                               rtol=1e-5)


# bounded per-user weights ----------------------------------------------------------------------
def test_byte_lru_evicts_the_least_recently_used_and_keeps_the_newest():
    lru: ByteLRU[str] = ByteLRU(10)
    assert lru.put("a", "A", 4) == []
    assert lru.put("b", "B", 4) == []
    assert lru.get("a") == "A"  # now b is the least recently used
    assert lru.put("c", "C", 4) == ["b"]
    assert lru.nbytes == 8
    assert lru.put("big", "X", 50) == ["a", "c"]
    assert lru.get("big") == "X"
    lru.pop("big")
    assert lru.nbytes == 0
    assert len(lru) == 0


def test_per_user_weights_stay_within_the_bound_and_survive_eviction(open_memory):
    """300 users each train their own weights with an 8 MB cache (about 6 users' weights):
    the cache never passes the bound, and every user ranks exactly as right after training."""
    mem = open_memory(reranker={"scope": "user", "cache_bytes": 8 * 2**20, "kind": "rmm"})
    users = [f"u{i}" for i in range(300)]
    trained = {}
    for user in users:
        ingest(mem, user, 2)
        res = mem.search("what pet do I have?", user_id=user, k=2)
        mem.feedback(res, cited=[res[-1].memory.id])
        trained[user] = scores(mem, user)
        assert mem.reranker.weights._cache.nbytes <= 8 * 2**20
    # the cache is shared with the users' search indexes: count the weights only
    assert len([k for k in mem._search.indexes.cache.keys() if not k.startswith("index:")]) < 10
    for user in users:
        assert scores(mem, user) == trained[user]
        assert mem.reranker.weights._cache.nbytes <= 8 * 2**20


def test_evicted_users_queued_steps_are_logged_not_lost(open_memory):
    """With batched steps, a user evicted from the cache has its queued step logged first
    (untrained weights are shared; a queued step of 384 dimensions takes ~6 KB)."""
    mem = open_memory(reranker={"scope": "user", "batch": 5, "cache_bytes": 20_000, "kind": "rmm"})
    users = [f"u{i}" for i in range(12)]
    for user in users:
        ingest(mem, user, 2)
        res = mem.search("what pet do I have?", user_id=user, k=2)
        mem.feedback(res, cited=[res[0].memory.id])
    names = [WeightStore.name("user", u) for u in users]
    logged = [len(mem.store.state_log(n)[1]) for n in names]
    assert 0 < sum(logged) < len(users)  # the evicted ones, before any close
    mem.close()
    again = open_memory(reranker={"scope": "user", "kind": "rmm"})
    assert [again.reranker.weights.load(n, again.embedder.dim).steps for n in names] == \
        [1] * len(users)
