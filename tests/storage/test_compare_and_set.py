"""The bounded compare-and-set helper, on a real SQLite store's named state."""

import pytest

from rmm_core.errors import StorageError
from rmm_core.storage import open_store
from rmm_core.storage.compare_and_set import compare_and_set


def test_lost_races_are_retried_then_the_write_lands(tmp_path):
    store = open_store(str(tmp_path / "m.sqlite"))
    rival = iter(range(2))  # another writer gets in before each of our first two writes

    def load():
        version, blob = store.load_state("counter")
        return version, [int(blob or b"0")]

    def save(version, state):
        if next(rival, None) is not None:
            store.save_state("counter", store.load_state("counter")[0], b"100")
        return store.save_state("counter", version, str(state[0]).encode())

    def bump(state):
        state[0] += 1
        return state[0]

    assert compare_and_set(load, save, bump, what="the counter") == 101
    assert store.load_state("counter") == (3, b"101")
    store.close()


def test_a_write_that_always_loses_ends_in_a_storage_error():
    loads = []

    def load():
        loads.append(1)
        return 0, {}

    with pytest.raises(StorageError, match="the blob kept changing under 5 attempts"):
        compare_and_set(load, lambda version, state: False, lambda state: None,
                        what="the blob", attempts=5)
    assert len(loads) == 5
