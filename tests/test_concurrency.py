"""Many threads and processes on one store: no lost write, no lock error, no torn update.

Writers use the deterministic `HashEmbedder` so that the test measures the storage layer,
not model start-up; every backend is covered.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections import Counter

import pytest

from rmm_core import ReflectiveMemory, Turn
from rmm_core.models.embed import HashEmbedder
from rmm_core.storage import open_store

pytestmark = pytest.mark.backends


def session_turns(tag: str, n: int = 4) -> list[Turn]:
    return [Turn("ann" if i % 2 else "bob", f"{tag} message {i} on hobby {hash(tag) % 5}",
                 id=f"{tag}:{i}") for i in range(n)]


def open_mem(target: str) -> ReflectiveMemory:
    return ReflectiveMemory.open(target, embedder=HashEmbedder(), sessions={"idle_timeout": None})


def assert_reflected_once(mem: ReflectiveMemory, user: str, expected: set[str]) -> None:
    assert {t.id for t in mem.turns(user_id=user)} == expected
    refs = Counter(r for m in mem.memories(user_id=user) for r in m.refs)
    assert set(refs) == expected
    assert max(refs.values()) == 1


def run_parallel(jobs) -> None:
    errors: list[BaseException] = []

    def guard(job):
        try:
            job()
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=guard, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors


def test_threads_append_end_and_search_on_one_memory(store_target):
    mem = open_mem(store_target)
    expected: set[str] = set()

    def worker(i: int):
        def job():
            for s in range(4):
                turns = session_turns(f"t{i}-{s}")
                mem.append(turns[:2], user_id="shared", session_id=f"t{i}-{s}")
                mem.search("hobby message", user_id="shared", k=3)
                mem.append(turns[2:], user_id="shared", session_id=f"t{i}-{s}")
                mem.end_session(user_id="shared", session_id=f"t{i}-{s}")
                mem.add_session(session_turns(f"own{i}-{s}"), user_id=f"u{i}")
                assert mem.search("message", user_id=f"u{i}", k=2)
        return job

    for i in range(6):
        expected |= {f"t{i}-{s}:{j}" for s in range(4) for j in range(4)}
    run_parallel([worker(i) for i in range(6)])
    assert_reflected_once(mem, "shared", expected)
    for i in range(6):
        assert_reflected_once(mem, f"u{i}", {f"own{i}-{s}:{j}" for s in range(4)
                                             for j in range(4)})
    mem.close()


def test_threads_ending_the_same_session_reflect_it_once(store_target):
    mem = open_mem(store_target)
    for k in range(3):
        mem.append(session_turns(f"c{k}", 6), user_id="u", session_id=f"c{k}")
    run_parallel([lambda: [mem.end_session(user_id="u", session_id=f"c{k}") for k in range(3)]
                  for _ in range(5)])
    assert_reflected_once(mem, "u", {f"c{k}:{j}" for k in range(3) for j in range(6)})


CHILD = textwrap.dedent("""
    import sys
    from rmm_core import ReflectiveMemory, Turn
    from rmm_core.models.embed import HashEmbedder
    target, name = sys.argv[1], sys.argv[2]
    mem = ReflectiveMemory.open(target, embedder=HashEmbedder(), session_idle_timeout=None)
    for k in range(3):  # every process races to reflect the same open sessions
        mem.end_session(user_id="shared", session_id=f"common{k}")
    for s in range(4):
        sid = f"{name}-{s}"
        turns = [Turn("ann", f"{sid} says hello {i}", id=f"{sid}:{i}") for i in range(4)]
        mem.append(turns[:2], user_id="shared", session_id=sid)
        mem.search("hello", user_id="shared", k=5)
        mem.append(turns[2:], user_id="shared", session_id=sid)
        mem.end_session(user_id="shared", session_id=sid)
    store = mem.store
    for _ in range(20):  # a compare-and-set counter, as the reranker's weights use
        while True:
            version, blob = store.load_state("counter")
            value = int(blob or b"0")
            if store.save_state("counter", version, str(value + 1).encode()):
                break
    mem.close()
""")


def test_processes_share_one_store_without_loss_or_lock_errors(store_target):
    mem = open_mem(store_target)
    for k in range(3):
        mem.append(session_turns(f"common{k}", 5), user_id="shared", session_id=f"common{k}")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, store_target, f"p{n}"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-3000:]
        assert "locked" not in err
    expected = {f"common{k}:{j}" for k in range(3) for j in range(5)}
    expected |= {f"p{n}-{s}:{i}" for n in range(2) for s in range(4) for i in range(4)}
    assert_reflected_once(mem, "shared", expected)
    version, blob = mem.store.load_state("counter")
    assert (version, int(blob)) == (40, 40)
    mem.close()


def test_concurrent_compare_and_set_from_threads_loses_no_update(store_target):
    store = open_store(store_target)

    def bump():
        for _ in range(25):
            while True:
                version, blob = store.load_state("n")
                if store.save_state("n", version, str(int(blob or b"0") + 1).encode()):
                    break

    run_parallel([bump for _ in range(4)])
    assert store.load_state("n") == (100, b"100")
    store.close()


def test_concurrent_feedback_steps_are_all_applied(store_target):
    from rmm_core.learn.rerank_features import shipped_weights

    mem = open_mem(store_target)
    mem.add_session(session_turns("fb", 8), user_id="u")
    probe = mem.search("hobby message", user_id="u", k=2)
    mem.feedback(probe, cited=[probe[0].memory.id])

    def job():
        for _ in range(5):
            res = mem.search("hobby message", user_id="u", k=2)
            mem.feedback(res, cited=[res[0].memory.id])

    run_parallel([job for _ in range(4)])
    mem.close()  # logs the batched steps
    again = open_mem(store_target)  # the weights start from the shipped ones and their steps
    assert again.reranker.weights_for("u", again.embedder.dim).steps == \
        shipped_weights().steps + 21
    again.close()
