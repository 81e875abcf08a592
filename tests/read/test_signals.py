"""The sorted-key helpers a search finds its signals with equal numpy's own."""

import numpy as np

from rmm_core.read.signals import distinct, distinct_groups, looked_up, within


def test_distinct_and_its_groups_equal_np_unique():
    rng = np.random.default_rng(0)
    for size in (0, 1, 2, 50, 3000):
        runs = [np.sort(rng.choice(5000, size=rng.integers(0, size + 1), replace=False))
                for _ in range(4)]  # sorted runs, as a query's posting lists are
        keys = np.concatenate(runs).astype(np.int64)
        held, group = np.unique(keys, return_inverse=True)
        assert np.array_equal(distinct(keys), held)
        mine, where = distinct_groups(keys)
        assert np.array_equal(mine, held)
        assert np.array_equal(where, group)


def test_a_lookup_finds_the_value_of_each_key_present_and_zero_elsewhere():
    keys = np.array([2, 5, 9])
    values = np.array([0.5, 1.5, 2.5], dtype=np.float32)
    out, found = looked_up(keys, values, np.array([9, 3, 2, 10, -1]))
    assert out.tolist() == [2.5, 0.0, 0.5, 0.0, 0.0]
    assert found.tolist() == [True, False, True, False, False]
    assert within(np.zeros(0, dtype=np.int64), np.array([1])).tolist() == [False]
    empty, none = looked_up(np.zeros(0, dtype=np.int64), values[:0], np.array([1, 2]))
    assert empty.tolist() == [0.0, 0.0]
    assert none.tolist() == [False, False]
