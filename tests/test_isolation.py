"""`user_id` isolation through every public method, and `forget` checked in the database itself.

Uses the deterministic `HashEmbedder`; both users say near-identical things on purpose, so
any leak in retrieval would surface as a cross-user hit.
"""

from __future__ import annotations

import sqlite3

import pytest
from backends import split_target

from rmm_core import FeedbackError, InvalidInputError, ReflectiveMemory, Turn
from rmm_core.models.embed import HashEmbedder
from rmm_core.storage.sql import USER_TABLES

pytestmark = pytest.mark.backends


def talk(user: str, n: int = 3) -> list[Turn]:
    return [Turn("me", f"I keep bees and sell honey at the market, note {i}", id=f"{user}:{i}")
            for i in range(n)]


@pytest.fixture
def two(store_target):
    mem = ReflectiveMemory.open(store_target, embedder=HashEmbedder(),
                                sessions={"idle_timeout": None})
    mem.add_session(talk("alice"), user_id="alice", session_id="s")
    mem.add_session(talk("bob"), user_id="bob", session_id="s")
    yield mem
    mem.close()


def test_reads_see_only_the_callers_data(two):
    for me in ("alice", "bob"):
        assert all(t.id.startswith(me) for t in two.turns(user_id=me))
        assert all(t.id.startswith(me) for t in two.turns(user_id=me, session_id="s"))
        assert all(r.startswith(me) for m in two.memories(user_id=me) for r in m.refs)
        hits = two.search("bees honey market", user_id=me, k=20)
        assert hits
        assert all(r.startswith(me) for h in hits for r in h.refs)
        assert all(h.memory.user_id == me for h in hits.candidates)
    assert len(two.search("bees", user_id="carol", k=5)) == 0


def test_writes_cannot_reach_the_other_user(two):
    before = [(m.id, m.text, m.refs) for m in two.memories(user_id="bob")]
    two.append(talk("bob-x"), user_id="bob", session_id="x")
    with pytest.raises(InvalidInputError):  # alice has no session "x", bob has
        two.end_session(user_id="alice", session_id="x")
    two.add_session([Turn("me", "alice adds more about bees", id="bob:0")], user_id="alice")
    assert {t.id for t in two.turns(user_id="bob")} >= {"bob:0", "bob:1", "bob:2"}
    assert [(m.id, m.text, m.refs) for m in two.memories(user_id="bob")][:len(before)] == before
    assert two.store.memory_vectors("alice", [m.id for m in two.memories(user_id="bob")]) == {}
    assert two.store.memories("alice", [m.id for m in two.memories(user_id="bob")]) == []


def test_feedback_cannot_teach_from_another_users_memories(two):
    two.feedback(two.search("bees", user_id="alice", k=2), cited=[])  # her own: accepted
    bob_ids = [m.id for m in two.memories(user_id="bob")]
    res = two.search("bees", user_id="alice", k=2)
    with pytest.raises(FeedbackError, match="not among this result's hits"):
        two.feedback(res, cited=bob_ids)


def count_rows(target: str, user: str) -> dict[str, int]:
    """Rows of `user` in every user table, read straight from the database."""
    sql = "SELECT COUNT(*) FROM {} WHERE user_id = %s"
    if target.startswith("postgresql://"):
        import psycopg

        base, schema = split_target(target)
        with psycopg.connect(base) as conn:
            return {t: conn.execute(sql.format(f"{schema}.{t}"), (user,)).fetchone()[0]
                    for t in USER_TABLES}
    with sqlite3.connect(target) as db:
        return {t: db.execute(sql.format(t).replace("%s", "?"), (user,)).fetchone()[0]
                for t in USER_TABLES}


def test_forget_removes_every_row_of_the_user_and_nothing_else(two, store_target):
    two.store.add_usage("alice", "s", {"calls": 1})
    two.store.claim_feedback("result-1", "alice")
    alice, bob = count_rows(store_target, "alice"), count_rows(store_target, "bob")
    assert all(alice[t] for t in ("turns", "sessions", "memories", "memory_vectors",
                                  "memory_versions", "user_state", "feedback_log", "llm_usage"))
    two.forget(user_id="alice")
    assert count_rows(store_target, "alice") == dict.fromkeys(USER_TABLES, 0)
    assert count_rows(store_target, "bob") == bob
    assert two.search("bees", user_id="alice").hits == []
    assert two.search("bees", user_id="bob").hits
