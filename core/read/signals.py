"""A query's lexical and dense signals as a ranking reads them: their scale over the bank
and their values at any positions (kept for a shortlist, looked up by position), and the
sorted-key helpers they are found with."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(slots=True)
class Signals:
    """A query's lexical and dense signals: their scale over the bank, their values at any
    positions, and the sorted positions to rank."""

    positions: np.ndarray
    lexical_stats: tuple[float, float]
    unit_stats: tuple[float, float]
    lexical_at: Callable[[np.ndarray], np.ndarray]
    unit_at: Callable[[np.ndarray], np.ndarray]


def signal_at(positions: np.ndarray, values: np.ndarray,
         computed: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """A signal's values at any positions: `values` at the sorted `positions` (a shortlist's,
    known), `computed` elsewhere."""
    def value_at(at: np.ndarray) -> np.ndarray:
        if at is positions:
            return values
        out, found = looked_up(positions, values, at)
        if not found.all():
            out[~found] = computed(at[~found])
        return out

    return value_at


def distinct(keys: np.ndarray) -> np.ndarray:
    """np.unique's sorted distinct `keys`, from a sort: on a search's few thousand keys
    several times faster than np.unique's hashing (numpy 2.4: 0.05 against 0.4 ms)."""
    ordered = np.sort(keys)
    return ordered[_firsts(ordered)]


def distinct_groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`distinct(keys)` and where each key is among them (np.unique's `return_inverse`),
    from a stable sort, which finds the sorted runs a query's posting lists are made of (at
    300,000 memories 0.39 ms a query against np.unique's 0.65)."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = _firsts(ordered)
    group = np.empty(len(keys), dtype=np.int64)
    group[order] = np.cumsum(first) - 1
    return ordered[first], group


def _firsts(ordered: np.ndarray) -> np.ndarray:
    """Which of the sorted keys differ from the one before."""
    first = np.empty(len(ordered), dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return first


def within(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Whether each of `keys` is among `sorted_keys`."""
    return _located(sorted_keys, keys)[1]


def looked_up(sorted_keys: np.ndarray, values: np.ndarray, keys: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """The value of each of `keys` (0 where it is not among `sorted_keys`), and whether it
    was there."""
    at, found = _located(sorted_keys, keys)
    out = np.zeros(len(keys), dtype=values.dtype)
    out[found] = values[at[found]]
    return out, found


def _located(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of `keys` is or would go among `sorted_keys` (clipped to the last), and
    whether it is there."""
    if not len(sorted_keys):
        return np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return at, sorted_keys[at] == keys


def sparse_stats(values: np.ndarray, n: int) -> tuple[float, float]:
    """Mean and spread (1 when 0) over `n` items of which those not in `values` are 0."""
    values = values.astype(np.float64)
    mean = float(values.sum()) / n
    return mean, math.sqrt(max(float(np.square(values).sum()) / n - mean * mean, 0.0)) or 1.0
