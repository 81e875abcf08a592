"""Crash safety: a child process is killed with SIGKILL while ingesting, on every backend.

Children use the deterministic `HashEmbedder` (the real model would only add start-up time);
the parent checks the database with a fresh process-local `ReflectiveMemory`.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter

import pytest

from rmm_core import ReflectiveMemory
from rmm_core.models.embed import HashEmbedder

pytestmark = pytest.mark.backends

CHILD = textwrap.dedent("""
    import sys, time
    from rmm_core import ReflectiveMemory, Turn
    from rmm_core.models.embed import HashEmbedder

    target, mode = sys.argv[1], sys.argv[2]
    mem = ReflectiveMemory.open(target, embedder=HashEmbedder(), session_idle_timeout=None)
    if mode == "stall":  # reflection hangs after its work, before its commit
        real = mem.store.commit_reflection
        def stalled(*args, **kw):
            print("committing", flush=True)
            time.sleep(60)
            return real(*args, **kw)
        mem.store.commit_reflection = stalled
    for s in range(10_000):
        sid = f"s{s}"
        turns = [Turn("ann" if i % 2 else "bob", f"session {s} turn {i} about topic {s % 7}",
                      id=f"{sid}:{i}") for i in range(6)]
        mem.append(turns[:3], user_id="u", session_id=sid)
        print("appended", *[t.id for t in turns[:3]], flush=True)
        mem.append(turns[3:], user_id="u", session_id=sid)
        print("appended", *[t.id for t in turns[3:]], flush=True)
        mem.end_session(user_id="u", session_id=sid)
        print("reflected", sid, flush=True)
""")


def run_child(target: str, mode: str, until: str, *, after: float = 0.0,
              timeout: float = 60.0) -> list[str]:
    """Start the child, SIGKILL it once a line starting with `until` appears (then `after` s)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    err = tempfile.TemporaryFile("w+")  # a file, not a pipe: a full pipe would block the child
    proc = subprocess.Popen([sys.executable, "-c", CHILD, target, mode], stdout=subprocess.PIPE,
                            stderr=err, text=True, env=env)
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith(until):
                time.sleep(after)
                break
            if time.monotonic() > deadline:
                break
        if proc.poll() is not None:
            err.seek(0)
            pytest.fail(f"child exited early: {err.read()[-2000:]}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        err.seek(0)
        assert proc.returncode == -signal.SIGKILL, err.read()[-3000:]
        lines += [x.strip() for x in proc.stdout.read().splitlines()]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return lines


def acknowledged(lines: list[str]) -> list[str]:
    return [tid for line in lines if line.startswith("appended") for tid in line.split()[1:]]


def assert_each_turn_reflected_once(mem: ReflectiveMemory, user: str = "u") -> None:
    refs = Counter(r for m in mem.memories(user_id=user) for r in m.refs)
    dup = {r: n for r, n in refs.items() if n > 1}
    assert not dup, f"turns reflected more than once: {dup}"
    states = [mem.store.session(user, t.session_id) for t in mem.turns(user_id=user)]
    ended = {s.session_id for s in states if s.status != "open"}
    for t in mem.turns(user_id=user):
        if t.session_id in ended:
            assert refs[t.id] == 1, f"turn {t.id} of an ended session was not reflected"


def test_sigkill_during_reflection_loses_nothing_and_recovers_exactly_once(store_target):
    lines = run_child(store_target, "stall", until="committing")
    acked = acknowledged(lines)
    assert len(acked) >= 6
    mem = ReflectiveMemory.open(store_target, embedder=HashEmbedder(),
                                sessions={"idle_timeout": None})
    assert set(acked) <= {t.id for t in mem.turns(user_id="u")}
    assert_each_turn_reflected_once(mem)
    stalled = acked[-1].split(":")[0]
    assert {r.split(":")[0] for m in mem.memories(user_id="u") for r in m.refs} >= {stalled}
    n = len(mem.memories(user_id="u"))
    mem.close()
    again = ReflectiveMemory.open(store_target, embedder=HashEmbedder(),
                                  sessions={"idle_timeout": None})
    assert len(again.memories(user_id="u")) == n  # the second open adds nothing
    again.close()


def test_sigkill_at_a_random_moment_of_ingest(store_target):
    lines = run_child(store_target, "run", until="reflected s1", after=random.uniform(0.1, 1.0))
    acked = acknowledged(lines)
    assert len(acked) >= 12
    mem = ReflectiveMemory.open(store_target, embedder=HashEmbedder(),
                                sessions={"idle_timeout": None})
    logged = [t.id for t in mem.turns(user_id="u")]
    assert set(acked) <= set(logged), "a turn whose append returned is missing"
    assert len(logged) == len(set(logged))
    assert_each_turn_reflected_once(mem)
    mem.reflect_pending(all_open=True)  # the open session the kill left behind, too
    assert_each_turn_reflected_once(mem)
    assert {r for m in mem.memories(user_id="u") for r in m.refs} == set(logged)
    mem.close()
