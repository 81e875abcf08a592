"""Bounded compare-and-set: read a versioned value, change it, write it back only if nobody
wrote in between; retried a few times, then a typed error (never an endless loop)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..errors import StorageError

S = TypeVar("S")
T = TypeVar("T")

ATTEMPTS = 20


def compare_and_set(load: Callable[[], tuple[int, S]], save: Callable[[int, S], bool],
                    change: Callable[[S], T], *, what: str, attempts: int = ATTEMPTS) -> T:
    """`change` a freshly loaded state in place and `save` it against the version it was read
    at; on a lost race start over. Returns what `change` returned; `StorageError` once
    `attempts` writes in a row lost."""
    for _ in range(attempts):
        version, state = load()
        out = change(state)
        if save(version, state):
            return out
    raise StorageError(f"{what} kept changing under {attempts} attempts at this write; retry")
