"""The vector slots that the snapshots of one user's index share (see `index.UserIndex`)."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..storage.base import IndexData
from .bm25 import grown


class SharedSlots:
    """What the snapshots of one user's index share, append-only, by slot (a memory's place
    in it; a changed memory takes a new slot and its old one dies): vector rows, the id to
    slot map, who wrote each, the approximate index. Only the newest snapshot extends it."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.rows = np.zeros((0, dim), dtype=np.float32)  # each slot's rows, own vector first
        self.row_slot = np.zeros(0, dtype=np.int64)
        self.row_start = np.zeros(0, dtype=np.int64)
        self.row_count = np.zeros(0, dtype=np.int64)
        self.speakers: list[list[str]] = []
        self.slot_of: dict[str, int] = {}
        self.sessions: dict[str, int] = {}
        self.assistant: tuple[frozenset[str], np.ndarray] | None = None
        self.ann: Any = None  # ann.Ann, once a large search needs it
        self.head: Any = None
        self.lock = threading.Lock()

    def append(self, data: IndexData, slots: int, rows: int) -> np.ndarray:
        """Write `data`'s memories after the first `slots` slots (holding `rows` rows);
        returns their slots. A first append takes the data's vectors (and the free rows of
        the buffer they are the start of) without a copy when each memory's rows are together."""
        k = len(data.ids)
        owner, vectors = data.owner, data.vectors
        counts = np.bincount(owner, minlength=k).astype(np.int64)
        new = np.arange(slots, slots + k, dtype=np.int64)
        first = np.flatnonzero(np.diff(owner, prepend=-1) != 0)
        if len(first) != np.count_nonzero(counts):  # a memory's rows apart: sort them
            order = np.argsort(owner, kind="stable")
            owner, vectors = owner[order], vectors[order]
            first = np.flatnonzero(np.diff(owner, prepend=-1) != 0)
        starts = np.full(k, rows, dtype=np.int64)
        starts[owner[first]] = rows + first
        if len(owner):
            self.rows = _buffer_of(vectors) if rows == 0 else grown(self.rows, rows, vectors)
        self.row_slot = grown(self.row_slot, rows, new[owner])
        self.row_start = grown(self.row_start, slots, starts)
        self.row_count = grown(self.row_count, slots, counts)
        del self.speakers[slots:]
        self.speakers += data.speakers if len(data.speakers) == k else [[] for _ in range(k)]
        for mid, slot in zip(data.ids, new):
            self.slot_of[mid] = int(slot)
        return new

    def codes(self, sessions: list[str], slots: np.ndarray) -> np.ndarray:
        """A number per session name (memories of no known session: one of their own)."""
        if len(sessions) != len(slots):
            return -1 - slots
        return np.fromiter((self.sessions.setdefault(s, len(self.sessions)) for s in sessions),
                           dtype=np.int64, count=len(sessions))


def _buffer_of(vectors: np.ndarray) -> np.ndarray:
    """The float32 rows as a buffer to append to: when they are the start of a larger buffer
    nothing else holds (a store's read), that buffer, whose further rows are free; else a
    copy with room to spare."""
    base = vectors.base
    if (isinstance(base, np.ndarray) and sys.getrefcount(base) <= 3  # vectors, base, the call
            and base.dtype == np.float32 and base.ndim == 2 and base.flags.c_contiguous
            and base.shape[1] == vectors.shape[1] and vectors.ctypes.data == base.ctypes.data):
        return base
    return grown(np.zeros((0, vectors.shape[1]), dtype=np.float32), 0, vectors)


@dataclass(slots=True)
class TurnRows:
    """The turn vectors of some memories, stacked; `offsets` into them for those that have any."""

    matrix: np.ndarray
    offsets: np.ndarray
    has: np.ndarray

    def best(self, query: np.ndarray, fallback: np.ndarray) -> np.ndarray:
        return best_of(self.matrix @ query, self.offsets, self.has, fallback)


def best_of(sims: np.ndarray, offsets: np.ndarray, has: np.ndarray,
            fallback: np.ndarray) -> np.ndarray:
    """The best of each group of `sims` (groups starting at `offsets`) for the items that
    `has` marks, `fallback` for the others."""
    out = np.asarray(fallback, dtype=np.float32).copy()
    if len(sims):
        out[has] = np.maximum.reduceat(sims, offsets)
    return out


@dataclass(slots=True)
class SlotVectors:
    """A snapshot's vector rows by slot: slot s owns rows [start[s], start[s] + count[s]),
    its own vector first, then its turns'."""

    rows: np.ndarray
    start: np.ndarray
    count: np.ndarray

    def units(self, slots: np.ndarray) -> np.ndarray:
        """The own vectors of `slots` (zeros for one without vectors)."""
        out = self.rows[self.start[slots]] if len(self.rows) else \
            np.zeros((len(slots), self.rows.shape[1]), dtype=np.float32)
        out[self.count[slots] == 0] = 0.0
        return out

    def own(self, sims: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Each of `slots`' own row's value among `sims` (one per row; 0 without one)."""
        out = sims[self.start[slots]]
        out[self.count[slots] == 0] = 0.0
        return out

    def slot_rows(self, slot: int) -> np.ndarray:
        """The vector rows of `slot`: its own first, then its turns'."""
        return self.rows[self.start[slot]:self.start[slot] + self.count[slot]]

    def turn_index(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The turn rows of `slots`, where each one's start among them (for those that have
        any), and which have any."""
        starts, counts = self.start[slots] + 1, np.maximum(self.count[slots] - 1, 0)
        has = counts > 0
        counts, starts = counts[has], starts[has]
        offsets = np.cumsum(counts) - counts
        within = np.arange(int(counts.sum())) - np.repeat(offsets, counts)
        return np.repeat(starts, counts) + within, offsets, has

    def turns(self, slots: np.ndarray) -> TurnRows:
        """The turn rows of `slots`, copied together (`turn_index`)."""
        rows, offsets, has = self.turn_index(slots)
        return TurnRows(np.ascontiguousarray(self.rows[rows]), offsets, has)

    def every_row(self, slots: np.ndarray) -> Rows:
        """Every vector row of `slots`, with the index of its slot among them."""
        counts = self.count[slots]
        offsets = np.cumsum(counts) - counts
        rows = np.repeat(self.start[slots], counts) + \
            (np.arange(int(counts.sum())) - np.repeat(offsets, counts))
        return Rows(self.rows[rows], np.repeat(np.arange(len(slots)), counts))


@dataclass(slots=True)
class Rows:
    """Vector rows of some memories, each with the index of its memory among them."""

    matrix: np.ndarray
    owner: np.ndarray


def neighbours(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position of the previous and next memory of the same session (-1 when none)."""
    n = len(codes)
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    idx = np.flatnonzero(codes[1:] == codes[:-1]) + 1
    prev[idx] = idx - 1
    nxt[idx - 1] = idx
    return prev, nxt
