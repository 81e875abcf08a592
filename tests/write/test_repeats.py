"""The same write twice is one (`write/repeats.py`), as a user meets it: a fact added again
(by `add`, `aadd`, two threads at once, after reopening), a conversation added again, a
session added again with or without turn ids; and what still counts as new. Real stores
(SQLite and PostgreSQL), the real packaged embedder."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from rmm_core import Turn

pytestmark = pytest.mark.backends

TEA = "I like green tea, genmaicha above all."
LONG = ("My sister Lena lives in Porto. She teaches chemistry at a high school there. "
        "Every August we sail along the coast together, and in winter we ski in the Alps. "
        "Her husband Rui builds boats and their son Tiago is learning the cello.")
CHAT = [{"role": "user", "content": "We adopted a beagle called Biscuit."},
        {"role": "assistant", "content": "Biscuit is a lovely name for a beagle!"}]


def ids(memories) -> list[str]:
    return [m.id for m in memories]


def test_the_same_fact_added_twice_is_one_memory_and_one_hit(open_memory):
    mem = open_memory()
    first = mem.add(TEA, user_id="ana")
    again = mem.add(TEA, user_id="ana")
    assert ids(again) == ids(first)
    assert [m.text for m in again] == [TEA]
    assert ids(mem.memories(user_id="ana")) == ids(first)
    hits = mem.search("What tea do I like?", user_id="ana", k=5)
    assert [h.memory.id for h in hits] == ids(first)


def test_a_long_fact_said_at_one_moment_is_stored_once_across_zones_and_reopening(
        open_memory):
    mem = open_memory(search={"max_hit_words": 20})
    first = mem.add(LONG, user_id="ana", occurred_at="2024-05-01T10:00:00+02:00")
    assert len(first) > 1  # one memory per passage
    assert ids(mem.add(LONG, user_id="ana", occurred_at="2024-05-01T08:00:00Z")) == ids(first)
    mem.close()
    reopened = open_memory(search={"max_hit_words": 20})
    assert ids(reopened.add(LONG, user_id="ana", occurred_at="2024-05-01T08:00")) == ids(first)
    assert len(reopened.memories(user_id="ana")) == len(first)


def test_the_async_twin_and_threads_retrying_at_once_store_it_once(open_memory):
    mem = open_memory()
    first = asyncio.run(mem.aadd(TEA, user_id="ana", agent_id="chef"))
    assert ids(asyncio.run(mem.aadd(TEA, user_id="ana", agent_id="chef"))) == ids(first)
    with ThreadPoolExecutor(4) as pool:  # a client's retries racing its first call
        raced = list(pool.map(lambda _: mem.add("I take the 7:40 train to work.",
                                                user_id="bo"), range(4)))
    assert len({tuple(ids(r)) for r in raced}) == 1
    assert len(mem.memories(user_id="bo")) == 1
    assert len(mem.memories(user_id="ana")) == 1


def test_what_differs_is_a_new_memory(open_memory):
    """Content is the key: another user, scope, metadata, time or wording is another write."""
    mem = open_memory()
    made = [mem.add(TEA, user_id="ana"), mem.add(TEA, user_id="bo"),
            mem.add(TEA, user_id="ana", agent_id="chef"),
            mem.add(TEA, user_id="ana", run_id="r1"),
            mem.add(TEA, user_id="ana", metadata={"kind": "taste"}),
            mem.add(TEA, user_id="ana", occurred_at="2024-05-01"),
            mem.add(TEA + " ", user_id="ana")]
    assert len({m.id for added in made for m in added}) == len(made)
    assert len(mem.memories(user_id="ana")) == len(made) - 1


def test_a_fact_added_again_returns_what_it_became_and_comes_back_once_deleted(open_memory):
    mem = open_memory()
    [fact] = mem.add(TEA, user_id="ana")
    mem.update(fact.id, "I like green tea and oolong.", user_id="ana")
    [again] = mem.add(TEA, user_id="ana")
    assert (again.id, again.text) == (fact.id, "I like green tea and oolong.")
    assert [v.reason for v in again.versions] == ["created", "update"]
    mem.delete(fact.id, user_id="ana")
    [back] = mem.add(TEA, user_id="ana")
    assert (back.id, back.text) == (fact.id, TEA)
    assert len(mem.memories(user_id="ana")) == 1


def test_a_conversation_added_again_adds_nothing(open_memory):
    mem = open_memory()
    first = mem.add(CHAT, user_id="ana", occurred_at="2024-05-01")
    assert first
    assert mem.add(CHAT, user_id="ana", occurred_at="2024-05-01") == []
    assert asyncio.run(mem.aadd(CHAT, user_id="ana", occurred_at="2024-05-01")) == []
    assert mem.add_session(CHAT, user_id="ana", started_at="2024-05-01") == []  # the same
    turns = mem.turns(user_id="ana")
    assert len(turns) == 2
    assert [t.id for t in turns] == [f"{turns[0].session_id}:1", f"{turns[0].session_id}:2"]
    assert ids(mem.memories(user_id="ana")) == ids(first)
    assert mem.add(CHAT, user_id="ana", occurred_at="2024-06-01")  # said again, later


@pytest.mark.parametrize("session_id", [None, "s9"])
def test_a_session_without_turn_ids_added_again_is_a_no_op(open_memory, session_id):
    mem = open_memory()
    assert mem.add_session(CHAT, user_id="ana", session_id=session_id)
    assert mem.add_session(CHAT, user_id="ana", session_id=session_id) == []
    assert len(mem.turns(user_id="ana")) == 2
    count = len(mem.memories(user_id="ana"))
    with ThreadPoolExecutor(2) as pool:  # a new session and its retry at once
        raced = list(pool.map(lambda _: mem.add_session(
            [("user", "I moved to Porto in May.")], user_id="ana",
            session_id=None if session_id is None else "s10"), range(2)))
    assert sorted(map(bool, raced)) == [False, True]
    assert len(mem.turns(user_id="ana")) == 3
    assert len(mem.memories(user_id="ana")) == count + 1


def test_a_session_with_turn_ids_added_again_is_a_no_op_and_one_continued_grows(open_memory):
    mem = open_memory()
    session = [Turn("Ana", "I moved to Porto in May.", id="p1")]
    assert mem.add_session(session, user_id="ana", session_id="s1")
    assert mem.add_session(session, user_id="ana", session_id="s1") == []
    # a session continued with other turns, given without ids, is appended as before
    mem.add_session([("user", "We found a flat near the river.")], user_id="ana",
                    session_id="s1")
    assert [t.id for t in mem.turns(user_id="ana", session_id="s1")] == ["p1", "s1:2"]
