"""Chaos: a misbehaving LLM in every LLM-using option harms nothing and no one.

Every test here uses `ChaosLLM`, a scripted fake (a plain object with `complete`, no model)
that raises `ConnectionError`, hangs far past `llm_timeout`, answers garbage, or answers
1,000 unclosed brackets. One memory per behaviour runs, with `llm_timeout=0.5`: LLM
segmentation, extraction and reconciliation with A-MEM notes (3 sessions: 2 by
`add_session`, 1 by `append` + `end_session`), `workflows.record`, SCM `recall`, working
context eviction (12 messages), and `respond`, while a bystander thread appends and searches
for another user on the same memory. Per behaviour that is 19 timed calls for the victim
and 80 for the bystander; the LLM got 17 calls when raising, 7 when hanging (one per
operation: a timed-out call ends the operation's LLM use), 30 with garbage and 31 with
brackets (with repair requests). The test prints these counts (`pytest -s`). A second test
runs 40 sessions against a hung LLM with `llm_workers=2`.

Checked: every call returns, or raises a typed `RMMError`, within `llm_timeout` + 1 s; no
turn is lost and every session is reflected (by the LLM-free fallbacks); the bystander's
calls all succeed; the thread count stays bounded (hung calls hold at most `llm_workers`).
"""

from __future__ import annotations

import threading
import time
import warnings

import pytest

from rmm_core import ReflectiveMemory, RMMError, Turn
from rmm_core.agents.working import BlockSpec
from rmm_core.errors import LLMError
from rmm_core.learn.attribute import CitedAnswer
from rmm_core.read.scm import Recall

TIMEOUT = 0.5
SLACK = 1.0
WORKERS = 8  # enough that each option meets a real timeout before all workers are stuck


class ChaosLLM:
    """A scripted fake LLM that misbehaves one way on every call."""

    def __init__(self, mode: str) -> None:
        self.mode, self.calls = mode, 0
        self.release = threading.Event()
        self._lock = threading.Lock()

    def complete(self, prompt: str) -> str:
        with self._lock:
            self.calls += 1
        if self.mode == "raises":
            raise ConnectionError("connection refused by the LLM server")
        if self.mode == "hangs":
            self.release.wait(120)
            return "far too late"
        if self.mode == "garbage":
            return "Sure!! <html>### {\"oops\": [1, 2, {\"summary\": 7"
        return "[" * 1000


def _sessions(user: str) -> list[list[Turn]]:
    return [[Turn("Ann", f"I adopted a beagle called Rex in May, session {s}.", f"{user}:{s}:0"),
             Turn("Bob", f"Congrats! I start a nursing job next week, session {s}.",
                  f"{user}:{s}:1"),
             Turn("Ann", f"Rex loves the park near my flat, session {s}.", f"{user}:{s}:2")]
            for s in range(3)]


TRAJECTORY = {"task": "Book a flight from Rome to Oslo on 3 June", "steps": [
    {"action": "search_flights(origin='Rome', destination='Oslo', date='3 June')"},
    {"action": "select_flight(id=1270)"}, {"action": "pay(card='visa')"}],
    "outcome": "Booked flight 1270."}  # no success flag: the LLM judge is asked


@pytest.fixture(scope="module", autouse=True)
def warm(embedder):
    """One-time costs (the notes' scikit-learn import, the model's first run) are paid
    before the clock runs: the bound is on what the LLM does."""
    pytest.importorskip("sklearn.feature_extraction.text")
    embedder.embed(["warm up"])


def _timed(record: list[tuple[float, str]], fn, *args, **kwargs):
    """Run one public call; return its result or the typed error it raised."""
    start = time.perf_counter()
    try:
        return fn(*args, **kwargs)
    except RMMError as exc:
        return exc
    finally:
        record.append((time.perf_counter() - start, fn.__name__))


@pytest.mark.parametrize("mode", ["raises", "hangs", "garbage", "brackets"])
def test_a_misbehaving_llm_in_every_option(mode, tmp_path, embedder):
    llm = ChaosLLM(mode)
    baseline = threading.active_count()
    mem = ReflectiveMemory.open(str(tmp_path / "chaos.sqlite"), llm=llm, embedder=embedder,
                                notes={"enabled": True}, stages={"llm_timeout": TIMEOUT,
                                                                 "llm_workers": WORKERS})
    victim, bystander = "victim", "bystander"
    took: list[tuple[float, str]] = []
    bystander_errors: list[BaseException] = []
    bystander_calls = []
    stop = threading.Event()

    def other_user() -> None:  # LLM-free calls of another user on the same memory
        n = 0
        while not stop.is_set() and n < 40:
            try:
                mem.append([Turn("Cleo", f"My cat Miso turned {n} months old.", f"b:{n}")],
                           user_id=bystander, session_id="b")
                mem.search("cat", user_id=bystander)
                n += 1
            except BaseException as exc:  # noqa: BLE001 (any failure fails the test)
                bystander_errors.append(exc)
                return
        bystander_calls.append(2 * n)

    helper = threading.Thread(target=other_user)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LLMFallbackWarning on every fallback
        helper.start()
        sessions = _sessions(victim)
        results = [_timed(took, mem.add_session, sessions[0], user_id=victim, session_id="s0"),
                   _timed(took, mem.add_session, sessions[1], user_id=victim, session_id="s1")]
        _timed(took, mem.append, sessions[2], user_id=victim, session_id="s2")
        results.append(_timed(took, mem.end_session, user_id=victim, session_id="s2"))
        flows = _timed(took, mem.workflows.record, TRAJECTORY, user_id=victim)
        recall = _timed(took, mem.recall, "Do you remember my dog's name?", user_id=victim)
        wc = mem.working_context(user_id=victim, session_id="chat", budget=200, unit="words",
                                 blocks={"human": BlockSpec(100, "the user")})
        for i in range(12):
            _timed(took, wc.add_message, Turn("user", f"Message {i}: " + "words " * 25))
        answer = _timed(took, mem.respond, "What is my dog called?", user_id=victim)
        stop.set()
        helper.join(60)

    # every call returned, or raised a typed error, in time
    assert all(isinstance(r, list) and r for r in results), results
    assert isinstance(flows, list)
    assert isinstance(recall, Recall)
    if mode in ("raises", "hangs"):
        assert isinstance(answer, LLMError)  # respond has no LLM-free answer: typed error
    else:  # whatever the LLM said is its answer; it cites nothing
        assert isinstance(answer, CitedAnswer)
        assert answer.cited == []
    slowest = max(took)
    assert slowest[0] <= TIMEOUT + SLACK, sorted(took)[-3:]
    # nothing lost: every turn stored, every session reflected, every turn in a memory
    turns = mem.turns(user_id=victim)
    appended = [t.id for s in sessions for t in s]
    assert [t.id for t in turns if t.session_id != "chat"] == appended
    assert [s.session_id for s in mem.store.pending_sessions(float("inf"), victim)] == ["chat"]
    assert {r for m in mem.memories(user_id=victim) for r in m.refs} >= set(appended)
    assert wc.summary
    assert len(wc.messages) < 12
    # the other user was not affected
    assert not bystander_errors
    assert bystander_calls
    assert bystander_calls[0] > 0
    assert len(mem.turns(user_id=bystander)) == bystander_calls[0] // 2
    # bounded threads: hung calls hold at most WORKERS threads, plus the bystander's helper
    assert threading.active_count() - baseline <= WORKERS + 1
    usage = mem.usage(user_id=victim)
    assert usage["failures"] > 0
    print(f"\n{mode}: {len(took)} timed victim calls (slowest {slowest[1]} {slowest[0]:.2f} s), "
          f"{bystander_calls[0]} bystander calls, {llm.calls} LLM calls, usage {usage}, "
          f"{threading.active_count() - baseline} extra threads")
    llm.release.set()
    mem.close()


def test_hung_llm_threads_stay_bounded_over_many_sessions(tmp_path, embedder):
    """40 sessions against an LLM that never answers: at most `llm_workers` (2) threads
    wait, and once both are stuck the other calls fail at once."""
    llm = ChaosLLM("hangs")
    baseline = threading.active_count()
    mem = ReflectiveMemory.open(str(tmp_path / "hung.sqlite"), llm=llm, embedder=embedder,
                                stages={"llm_timeout": 0.2, "llm_workers": 2,
                                        "reconciliation": "threshold"},
                                segmentation={"kind": "embedding"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in range(40):
            mem.add_session([Turn("Ann", f"Fact number {s} about my garden.", f"t{s}")],
                            user_id="u", session_id=f"s{s}")
    assert threading.active_count() - baseline <= 2
    assert len(mem.memories(user_id="u")) >= 1
    assert len(mem.turns(user_id="u")) == 40
    usage = mem.usage(user_id="u")
    assert usage["calls"] == 2  # the rest failed at once: no thread was started
    assert usage["failures"] == 40
    llm.release.set()
    mem.close()
