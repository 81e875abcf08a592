"""The approximate index of large banks: faiss IVF with 8-bit codes, trained once per size
class and kept up to date as memories come and go."""

from __future__ import annotations

import math
import threading

import numpy as np


class Ann:
    """An IVF index (8-bit codes) over unit vectors, ids = slots, for a shortlist on large
    banks. It is trained once per size class (a power of 4 in memories) and takes later
    memories as they come; `trainings` counts the trainings of this process."""

    trainings = 0

    def __init__(self, units: np.ndarray, slots: np.ndarray,
                 trained: Ann | None = None) -> None:
        import faiss

        n, dim = units.shape
        self.size_class = size_class(n)
        if trained is not None and trained.size_class == self.size_class:
            ivf = faiss.clone_index(trained.index)
            ivf.reset()
        else:
            nlist = int(np.clip(4 * np.sqrt(n), 16, 8192))
            ivf = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dim), dim, nlist,
                                                faiss.ScalarQuantizer.QT_8bit,
                                                faiss.METRIC_INNER_PRODUCT)
            ivf.train(units[evenly(n, 40 * nlist)])
            ivf.nprobe = max(8, nlist // 20)
            Ann.trainings += 1
        ivf.add_with_ids(units, slots)
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


def size_class(n: int) -> int:
    """The bank size class an IVF is trained for: floor(log4 n)."""
    return int(math.log(max(n, 1), 4))


def evenly(n: int, count: int) -> np.ndarray:
    """`count` positions spread evenly over `n` (all of them when n <= count)."""
    return np.arange(n) if n <= count else np.linspace(0, n - 1, count).astype(np.int64)
