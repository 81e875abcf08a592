"""Version rows written by `record_changes` and `update_memory_attrs`: consecutive per memory
within one call, the memories' last versions read in one statement for the whole call."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from rmm_core.storage import open_store
from rmm_core.storage.base import AttrsUpdate, NewMemory
from rmm_core.types import FactChange, Memory

pytestmark = pytest.mark.backends
AT = datetime(2024, 6, 1, tzinfo=timezone.utc)


@pytest.fixture
def store(store_target):
    s = open_store(store_target)
    vector = np.eye(1, 8, dtype=np.float32)
    s.add_memories("u", [NewMemory(Memory(id=f"m{i}", user_id="u", text=f"fact {i}",
                                          key=f"fact {i}", refs=[]), vector)
                         for i in range(4)], "direct")
    yield s
    s.close()


def _versions(store, memory_id: str) -> list[tuple[int, str]]:
    [memory] = store.memories("u", [memory_id])
    return [(v.version, v.reason) for v in memory.versions]


def test_changes_write_consecutive_versions_per_memory(store):
    store.update_memory_attrs("u", [AttrsUpdate("m0", {"n": 1}, reason="notes")])
    store.record_changes("u", [FactChange("m0", "m1", AT, "supersedes"),
                               FactChange("m0", "m2", AT, "supersedes"),
                               FactChange("m3", "m1", AT, "supersedes"),
                               FactChange("m2", "m3", AT, "conflicts")])
    assert _versions(store, "m0") == [(1, "created"), (2, "notes"), (3, "superseded"),
                                      (4, "superseded")]
    assert _versions(store, "m3") == [(1, "created"), (2, "superseded")]
    assert _versions(store, "m2") == [(1, "created")]  # a conflict writes no version
    store.update_memory_attrs("u", [AttrsUpdate("m1", {"n": 2}, reason="notes"),
                                    AttrsUpdate("m1", {"n": 3}, reason="notes"),
                                    AttrsUpdate("m2", {"n": 4}),
                                    AttrsUpdate("m0", {"n": 5}, reason="links")])
    assert _versions(store, "m1") == [(1, "created"), (2, "notes"), (3, "notes")]
    assert _versions(store, "m2") == [(1, "created")]
    assert _versions(store, "m0")[-1] == (5, "links")


@pytest.mark.parametrize("store_target", ["sqlite"], indirect=True)
def test_last_versions_are_read_in_one_statement_a_call(store):
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    store.record_changes("u", [FactChange(f"m{i}", "m3", AT, "supersedes") for i in range(3)])
    store.update_memory_attrs("u", [AttrsUpdate(f"m{i}", {}, reason="notes") for i in range(4)])
    store._conn.set_trace_callback(None)
    assert sum("MAX(version)" in s for s in statements) == 2
