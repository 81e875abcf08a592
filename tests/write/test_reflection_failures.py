"""A failed reflection is recorded on its session and retried with a bound; it is never
raised into another user's call or into `open()`. On every backend (SQLite, PostgreSQL).

The failure comes from a compressor that raises on one user's text (a non-LLM stage: LLM
failures fall back instead of failing); the embedder is the real packaged one, no LLM.
"""

from __future__ import annotations

import json
import time

import pytest
from backends import run_sql

from rmm_core import ReflectiveMemory, Turn
from rmm_core.cli import main
from rmm_core.errors import ReflectionError
from rmm_core.storage import open_store
from rmm_core.storage.base import SCHEMA_VERSION
from rmm_core.write.compress import FillerCompressor

pytestmark = pytest.mark.backends
POISON = "zebra"


class PoisonedCompressor(FillerCompressor):
    """Raises on any text holding POISON (a bug or outage in one stage, for one user)."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True

    def compress(self, texts):
        if self.broken and any(POISON in t for t in texts):
            raise RuntimeError("compressor crashed")
        return super().compress(texts)


def _open(target, embedder, compressor, **settings) -> ReflectiveMemory:
    return ReflectiveMemory.open(target, embedder=embedder, compressor=compressor,
                                 **{"sessions.reflection_retry_delay": 0, **settings})


VICTIM = [Turn("Ann", f"My {POISON} plush toy is called Stripes.", "v:1"),
          Turn("Bob", "Cute! Where did you get it?", "v:2")]


def test_a_failed_reflection_is_recorded_and_spares_others(store_target, embedder, capsys):
    compressor = PoisonedCompressor()
    mem = _open(store_target, embedder, compressor, sessions={"idle_timeout": 0.5})
    with pytest.raises(ReflectionError, match="compressor crashed"):
        mem.add_session(VICTIM, user_id="victim", session_id="v")
    state = mem.store.session("victim", "v")
    assert state.failures == 1
    assert "compressor crashed" in state.last_error
    assert [t.id for t in mem.turns(user_id="victim")] == ["v:1", "v:2"]  # turns kept
    # another user's append leaves the victim's session alone; the sweep retries it (the
    # failure is recorded there) without raising
    time.sleep(0.6)
    stored = mem.append([Turn("Cleo", "My cat Miso is two.", "c:1")], user_id="other",
                        session_id="c")
    assert [t.id for t in stored] == ["c:1"]
    assert mem.store.session("victim", "v").failures == 1
    assert mem.reflect_pending() == []
    assert mem.store.session("victim", "v").failures == 2
    assert mem.add_session([Turn("Cleo", "Miso likes tuna.", "c:2")], user_id="other")
    assert mem.search("cat", user_id="other").hits
    mem.close()
    # open() retries it once more (the third failure) and does not raise
    mem = _open(store_target, embedder, compressor)
    assert mem.store.session("victim", "v").failures == 3
    # after reflection_max_attempts (3) failures the sweep leaves it alone
    assert mem.reflect_pending() == []
    assert mem.store.session("victim", "v").failures == 3
    mem.append([Turn("Dan", "Hello there.", "d:1")], user_id="waiter", session_id="w")
    counts = mem.store.reflection_counts()
    assert counts["failed"] == 1
    assert counts["waiting"] >= 1
    assert mem.store.reflection_counts("victim") == {"waiting": 0, "failed": 1}
    mem.close()
    assert main(["stats", "--db", store_target, "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["sessions_failed"] == 1
    assert figures["sessions_waiting"] == counts["waiting"]
    # once the stage works again, an explicit retry reflects it and clears the record
    compressor.broken = False
    mem = _open(store_target, embedder, compressor)
    assert mem.reflect_pending(retry_failed=True)
    state = mem.store.session("victim", "v")
    assert (state.reflected, state.failures, state.last_error) == (2, 0, None)
    assert {r for m in mem.memories(user_id="victim") for r in m.refs} == {"v:1", "v:2"}
    mem.close()


def test_a_size_triggered_reflection_failure_does_not_fail_the_append(store_target, embedder):
    mem = _open(store_target, embedder, PoisonedCompressor(), sessions={"max_turns": 2})
    stored = mem.append(VICTIM, user_id="victim", session_id="v")
    assert [t.id for t in stored] == ["v:1", "v:2"]
    assert mem.store.session("victim", "v").failures == 1
    mem.close()


def test_schema_3_stores_gain_the_failure_columns(store_target, embedder):
    mem = ReflectiveMemory.open(store_target, embedder=embedder)
    mem.add_session(VICTIM, user_id="u", session_id="s")
    mem.close()
    _downgrade_to_schema_3(store_target)
    store = open_store(store_target)
    state = store.session("u", "s")
    assert (state.reflected, state.failures, state.last_error) == (2, 0, None)
    store.record_reflection_failure("u", "s", "boom", retry_at=None)
    assert store.session("u", "s").failures == 1
    store.close()
    assert SCHEMA_VERSION >= 4


def _downgrade_to_schema_3(target: str) -> None:
    """The sessions table as schema 3 had it: without the failure columns."""
    drop = ["ALTER TABLE sessions DROP COLUMN reflect_failures",
            "ALTER TABLE sessions DROP COLUMN reflect_error",
            "ALTER TABLE sessions DROP COLUMN reflect_retry_at",
            "UPDATE meta SET value = '3' WHERE key = 'schema_version'"]
    run_sql(target, drop)


def test_a_notes_failure_after_the_commit_is_recorded_and_retried(store_target, embedder,
                                                                  monkeypatch):
    mem = ReflectiveMemory.open(store_target, embedder=embedder, notes={"enabled": True})

    def down(*args, **kwargs):
        raise ConnectionError("store went away while writing notes")

    monkeypatch.setattr(mem.store, "update_memory_attrs", down)
    first = mem.add_session(VICTIM, user_id="u", session_id="a")  # does not raise
    monkeypatch.undo()
    assert first
    assert all("links" not in m.attrs for m in mem.memories(user_id="u"))
    state = mem.store.session("u", "a")
    assert state.reflected == 2
    assert state.failures == 0
    assert "notes" in state.last_error
    mem.add_session([Turn("Ann", "Stripes sleeps on my pillow every night.", "b:1")],
                    user_id="u", session_id="b")
    assert all("links" in m.attrs and m.attrs.get("context")
               for m in mem.memories(user_id="u"))  # the first session's notes, retried
    mem.close()
