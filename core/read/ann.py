"""The approximate index of large banks: faiss IVF with 8-bit codes, trained once per size
class and kept up to date as memories come and go."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

BLOCK = 65_536
"""Unit vectors added to an index at a time."""


class Ann:
    """An IVF index (8-bit codes) over unit vectors, ids = slots, for a shortlist on large
    banks. It is trained once per size class (a power of 4 in memories) and takes later
    memories as they come; `trainings` counts the trainings of this process."""

    trainings = 0

    def __init__(self, units_at: Callable[[np.ndarray], np.ndarray], slots: np.ndarray,
                 trained: Ann | None = None) -> None:
        """The index of the memories in `slots`, whose unit vectors `units_at(positions)`
        gives (read a block at a time, so that they are never copied whole)."""
        import faiss

        n = len(slots)
        self.size_class = size_class(n)
        if trained is not None and trained.size_class == self.size_class:
            ivf = faiss.clone_index(trained.index)
            ivf.reset()
        else:
            sample = units_at(evenly(n, 40 * nlist_for(n)))
            ivf = ivf_index(sample.shape[1], nlist_for(n))
            ivf.train(sample)
            Ann.trainings += 1
        for start in range(0, n, BLOCK):
            ivf.add_with_ids(units_at(np.arange(start, min(n, start + BLOCK))),
                             slots[start:start + BLOCK])
        self.index = ivf
        self.lock = threading.Lock()

    def search(self, query: np.ndarray, depth: int) -> np.ndarray:
        with self.lock:
            return self.index.search(query.reshape(1, -1).astype(np.float32), depth)[1][0]

    def update(self, units: np.ndarray, slots: np.ndarray, dead: np.ndarray) -> None:
        """Take new memories' unit vectors and drop dead slots."""
        import faiss

        with self.lock:
            if len(dead):
                self.index.remove_ids(faiss.IDSelectorBatch(dead.astype(np.int64)))
            if len(slots):
                self.index.add_with_ids(units, slots)

    @property
    def nbytes(self) -> int:
        ivf = self.index
        return ivf.ntotal * (ivf.code_size + 8) + ivf.nlist * ivf.d * 4


def nlist_for(n: int) -> int:
    """IVF lists for a bank of `n` memories: 4 sqrt(n), within [16, 8192]."""
    return int(np.clip(4 * np.sqrt(n), 16, 8192))


def ivf_index(dim: int, nlist: int) -> Any:
    """An untrained IVF index with 8-bit codes over inner products, searching nprobe =
    max(8, nlist / 20) lists."""
    import faiss

    ivf = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dim), dim, nlist,
                                        faiss.ScalarQuantizer.QT_8bit,
                                        faiss.METRIC_INNER_PRODUCT)
    ivf.nprobe = max(8, nlist // 20)
    return ivf


def size_class(n: int) -> int:
    """The bank size class an IVF is trained for: floor(log4 n)."""
    return int(math.log(max(n, 1), 4))


def evenly(n: int, count: int) -> np.ndarray:
    """`count` positions spread evenly over `n` (all of them when n <= count)."""
    return np.arange(n) if n <= count else np.linspace(0, n - 1, count).astype(np.int64)
