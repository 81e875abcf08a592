"""`forget` is one transaction over every per-user table and state, and leaves no residue.

Real SQLite files and the real PostgreSQL backend (`backends` marker), the real embedder.
The interrupted-forget test stands in for a kill at the worst moment by making the store
fail as it erases the per-user state (the last thing a forget writes).
"""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from backends import split_target
from test_isolation import count_rows

from rmm_core import ReflectiveMemory, StorageError, Turn
from rmm_core.cli import main
from rmm_core.models.embed import HashEmbedder
from rmm_core.ops.commands import OK, UNKNOWN_USER
from rmm_core.storage.base import user_state_name
from rmm_core.storage.sql import USER_TABLES

pytestmark = pytest.mark.backends

USER = "zelda-q7x"
FRAGMENTS = ("Quokkaville", "xylophonist", "marmalade-lighthouse", "quokkafrappe",
             "Brambleton", "periwinkle-zeppelin")
"""Distinctive words of the forgotten user: in turns, memories, versions, notes, workflows
and the working context."""


def fill(mem: ReflectiveMemory, user: str) -> None:
    """Give `user` data in every place a user's text can live."""
    said = [Turn("me", "I moved to Quokkaville and I am a xylophonist by trade."),
            Turn("me", "My flat faces the marmalade-lighthouse on the harbour.")]
    mem.add_session(said, user_id=user, session_id="s1")
    mem.add_session([Turn(t.speaker, t.text) for t in said], user_id=user, session_id="s2")
    assert any(len(m.versions) > 1 for m in mem.memories(user_id=user))  # merged: versions
    mem.workflows.record({"task": "Make the usual drink", "success": True, "steps": [
        {"observation": "kitchen", "action": "brew quokkafrappe with oat milk"}]},
        user_id=user)
    wc = mem.working_context(user_id=user)
    wc.core_memory_append("human", "Grew up in Brambleton")
    wc.add_message(Turn("me", "Tell me about the periwinkle-zeppelin again"))
    res = mem.search("where do I live", user_id=user, k=2)
    mem.feedback(res, cited=[res[0].memory.id])


@pytest.fixture
def mem(store_target, embedder):
    mem = ReflectiveMemory.open(store_target, embedder=embedder, stages={"merge_threshold": 0.9},
                                notes={"enabled": True}, reranker={"scope": "user"},
                                sessions={"idle_timeout": None})
    fill(mem, USER)
    mem.add_session([Turn("me", "Bob keeps bees on his roof.")], user_id="bob", session_id="b")
    yield mem
    mem.close()


def state_rows(target: str, user: str) -> tuple[int, int]:
    """(named-state rows of the user that still hold bytes, logged steps of the user)."""
    like = user_state_name(user, "") + "%"
    sql = ("SELECT (SELECT COUNT(*) FROM {s}named_state WHERE name LIKE {p} AND "
           "length(blob) > 0), (SELECT COUNT(*) FROM {s}state_deltas WHERE name LIKE {p})")
    if target.startswith("postgresql://"):
        base, schema = split_target(target)
        with psycopg.connect(base) as conn:
            return conn.execute(sql.format(s=f"{schema}.", p="%s"), (like, like)).fetchone()
    with sqlite3.connect(target) as db:
        return db.execute(sql.format(s="", p="?"), (like, like)).fetchone()


def test_forget_erases_every_table_and_every_per_user_state(mem, store_target):
    assert mem.store.has_user(USER)
    assert all(state_rows(store_target, USER))
    bob = count_rows(store_target, "bob")
    mem.forget(user_id=USER)
    assert count_rows(store_target, USER) == dict.fromkeys(USER_TABLES, 0)
    assert state_rows(store_target, USER) == (0, 0)
    assert not mem.store.has_user(USER)
    assert count_rows(store_target, "bob") == bob
    assert mem.store.has_user("bob")


def test_feedback_queued_in_a_batch_is_not_logged_after_a_forget(store_target, embedder):
    with ReflectiveMemory.open(store_target, embedder=embedder, reranker={"scope": "user",
                                                                          "batch": 4}) as mem:
        mem.add_session([Turn("me", "I moved to Quokkaville.")], user_id=USER)
        res = mem.search("where do I live", user_id=USER, k=1)
        mem.feedback(res, cited=[res[0].memory.id])  # queued in memory, not yet logged
        mem.forget(user_id=USER)
    assert state_rows(store_target, USER) == (0, 0)  # close() logged nothing for the user


@contextmanager
def failing_when_state_is_erased(store):
    """The store's transactions fail at the statement that erases per-user named state."""
    real_tx = store._tx

    class Dying:
        def __init__(self, tx):
            self.tx = tx

        def __getattr__(self, name):
            return getattr(self.tx, name)

        def run(self, sql, params=()):
            self._check(sql)
            return self.tx.run(sql, params)

        def many(self, sql, rows):
            self._check(sql)
            return self.tx.many(sql, rows)

        @staticmethod
        def _check(sql):
            if sql.startswith("INSERT INTO named_state"):
                raise StorageError("killed while erasing the per-user state")

    @contextmanager
    def tx(*args, **kw):
        with real_tx(*args, **kw) as db:
            yield Dying(db)

    store._tx = tx
    try:
        yield
    finally:
        store._tx = real_tx


def test_an_interrupted_forget_leaves_everything_or_nothing(mem, store_target):
    before = count_rows(store_target, USER), state_rows(store_target, USER)
    with failing_when_state_is_erased(mem.store), pytest.raises(StorageError, match="killed"):
        mem.forget(user_id=USER)
    assert (count_rows(store_target, USER), state_rows(store_target, USER)) == before
    assert "Brambleton" in mem.working_context(user_id=USER).blocks["human"].value
    mem.forget(user_id=USER)  # and the retry completes
    assert state_rows(store_target, USER) == (0, 0)


@pytest.mark.parametrize("kind", ["workflows", "working context"])
def test_cli_forgets_a_user_who_has_only_state_rows(store_target, embedder, capsys, kind):
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:
        if kind == "workflows":
            mem.workflows.record({"task": "Make the usual drink", "success": True, "steps": [
                {"observation": "kitchen", "action": "brew quokkafrappe"}]}, user_id=USER)
        else:
            mem.working_context(user_id=USER).core_memory_append("human", "From Brambleton")
        assert USER not in mem.store.users()
        assert mem.store.has_user(USER)
    assert main(["forget", "--db", store_target, "--user", USER, "--yes"]) == OK
    assert state_rows(store_target, USER) == (0, 0)
    assert main(["forget", "--db", store_target, "--user", USER, "--yes"]) == UNKNOWN_USER
    capsys.readouterr()


def residue(path: str, words: tuple[str, ...]) -> dict[str, list[str]]:
    """Which of `words` each of the SQLite file, its -wal and -shm holds, as raw bytes."""
    found = {}
    for suffix in ("", "-wal", "-shm"):
        file = Path(path + suffix)
        data = file.read_bytes() if file.exists() else b""
        found[suffix or "db"] = [w for w in words if w.encode() in data]
    return found


@pytest.mark.parametrize("store_target", ["sqlite"], indirect=True)
def test_no_byte_of_a_forgotten_user_stays_in_the_sqlite_files(mem, store_target):
    words = (*FRAGMENTS, USER)
    assert any(residue(store_target, words).values())  # the check sees the text before
    mem.forget(user_id=USER)
    assert residue(store_target, words) == {"db": [], "-wal": [], "-shm": []}  # still open
    mem.add_session([Turn("me", "Bob also sells honey.")], user_id="bob", session_id="c")
    mem.close()
    assert residue(store_target, words) == {"db": [], "-wal": [], "-shm": []}
    with ReflectiveMemory.open(store_target, embedder=mem.embedder) as again:
        assert again.turns(user_id=USER) == []
        assert len(again.turns(user_id="bob")) == 2


KILLER = textwrap.dedent("""
    import sys
    from rmm_core import ReflectiveMemory
    from rmm_core.models.embed import HashEmbedder

    mem = ReflectiveMemory.open(sys.argv[1], embedder=HashEmbedder(), session_idle_timeout=None)
    print("ready", flush=True)
    for user in sys.argv[2:]:
        mem.forget(user_id=user)
        print("forgot", user, flush=True)
""")


def snapshot(target: str, user: str) -> tuple:
    return tuple(count_rows(target, user).values()) + tuple(state_rows(target, user))


def test_a_killed_forget_leaves_each_user_whole_or_gone(store_target):
    """3 rounds of 20 users; each round a child forgets them one by one and is SIGKILLed at
    a random moment after its first forget. Every user is then exactly as before or entirely
    gone, and every forget the child acknowledged is complete."""
    rng = random.Random(18)
    mem = ReflectiveMemory.open(store_target, embedder=HashEmbedder(),
                                sessions={"idle_timeout": None})
    outcomes = Counter()
    for round_ in range(3):
        users = [f"r{round_}-u{i}" for i in range(20)]
        for user in users:
            mem.add_session([Turn("me", f"{user} keeps bees"), Turn("me", "and sells honey")],
                            user_id=user, session_id="s")
            mem.working_context(user_id=user).core_memory_append("human", f"{user} is Ada")
            mem.store.append_state_delta(user_state_name(user, "reranker"), b"step")
        before = {u: snapshot(store_target, u) for u in users}
        proc = subprocess.Popen([sys.executable, "-c", KILLER, store_target, *users],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        first = proc.stdout.readline().split()[1]
        time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        # an acknowledgement is a whole "forgot USER" line; anything else on stdout is not one
        lines = [line.split() for line in proc.stdout.read().splitlines()]
        acknowledged = {first, *(w[1] for w in lines if len(w) == 2 and w[0] == "forgot")}
        for user in users:
            now = snapshot(store_target, user)
            assert now in (before[user], (0,) * len(now)), (user, before[user], now)
            assert user not in acknowledged or not any(now)
            outcomes["gone" if not any(now) else "whole"] += 1
    mem.close()
    assert outcomes["gone"] >= 3
