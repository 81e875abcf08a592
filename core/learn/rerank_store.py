"""Reranker weights in the store: a base blob plus a log of small steps, cached per scope.

Which weights (the paper's bilinear maps or the feature weights) is a `WeightModel`: how
its blobs and steps are written, read and added up. The store logic is the same for both.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..errors import FeedbackError, StorageError
from ..lru import ByteLRU
from ..storage.base import Store, user_state_name
from .rerank_bilinear import BilinearModel

_FLOAT32_MAX = float(np.finfo(np.float32).max)


class WeightModel(Protocol):
    """One kind of reranker weights as the store keeps them. Weights have `dim`, `steps`,
    `nbytes` and `is_finite()`; a gradient is whatever `add` sums."""

    kind: str
    """The state name's stem: `<kind>/global`, or the user's `<kind>`."""

    def initial(self, dim: int) -> Any: ...
    def decode(self, blob: bytes) -> Any: ...
    def encode(self, weights: Any) -> bytes: ...
    def encode_step(self, grads: Any, count: int, rate: float) -> bytes: ...
    def apply(self, weights: Any, blobs: Sequence[bytes], name: str) -> Any: ...
    def add(self, a: Any, b: Any) -> Any: ...
    def nbytes(self, grads: Any) -> int: ...
    def dim_of(self, grads: Any) -> int: ...
    def reach(self, weights: Any | None, grads: Any, rate: float) -> float: ...


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Weights as read from the store: the base of `version` plus exactly the steps `seen`."""

    version: int
    seen: frozenset[int]
    weights: Any
    shared: bool = False
    """The model's initial weights (one instance for every scope): they cost no memory."""

    @property
    def nbytes(self) -> int:
        """Memory held: its own weights (none for shared ones) and its bookkeeping."""
        return (0 if self.shared else self.weights.nbytes) + 256 + 64 * len(self.seen)


class WeightStore:
    """Reranker weights in the store: a base blob plus a log of small steps.

    A step appends its update (a few KB) and never conflicts with another, so concurrent
    steps from threads or processes are all kept; every `compact_every` steps the log is
    folded into a new base (compare-and-set, with the folded steps deleted in the same
    transaction). Weights read are cached in `cache` (a byte-bounded LRU, own one of
    `storage.cache_bytes` when not given; least recently used evicted, their queued steps logged
    first).
    """

    def __init__(self, store: Store, *, learning_rate: float = 1e-3, batch: int = 1,
                 compact_every: int = 64, cache_bytes: int = 64 * 2**20,
                 model: WeightModel | None = None, cache: ByteLRU | None = None) -> None:
        self.store = store
        self.learning_rate = learning_rate
        self.batch = batch
        self.compact_every = compact_every
        self.model: WeightModel = model if model is not None else BilinearModel()
        self._cache: ByteLRU[Snapshot] = cache if cache is not None else ByteLRU(cache_bytes)
        self._pending: dict[str, tuple[int, Any]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def name(scope: str, user_id: str, kind: str = "reranker") -> str:
        return f"{kind}/global" if scope == "global" else user_state_name(user_id, kind)

    def load(self, name: str, dim: int) -> Any:
        """The newest weights: base plus every logged step (the initial ones before any)."""
        return self._snapshot(name, dim).weights

    def _snapshot(self, name: str, dim: int) -> Snapshot:
        """The newest weights with the version and steps they hold, read as one consistent
        whole (another thread may replace the cached one at any time).

        Folds only the steps this process has not seen; a compaction elsewhere (new base
        version) means a full reload.
        """
        initial = self.model.initial(dim)
        for _ in range(100):
            version, seqs = self.store.state_log(name)
            cached = self._cache.get(name)
            if cached is not None and cached.version == version:
                weights, seen = cached.weights, cached.seen
            else:
                base_version, blob = self.store.load_state(name)
                if base_version != version:
                    continue  # compacted between the two reads
                # b"": erased by forget
                weights = self.model.decode(blob) if blob else initial
                seen = frozenset()
            new = [q for q in seqs if q not in seen]
            if new:
                deltas = self.store.state_deltas(name, new)
                if len(deltas) < len(new):
                    self._cache.pop(name)
                    continue  # folded into a newer base meanwhile
                weights = self.model.apply(weights, [deltas[q] for q in new], name)
            if weights.dim != dim:
                raise StorageError(f"stored reranker weights {name!r} have dimension "
                                   f"{weights.dim}, expected {dim}: the embedding model "
                                   "or the reranker's features changed")
            unchecked = cached is None or weights is not cached.weights
            if unchecked and not weights.is_finite():
                warnings.warn(f"stored reranker weights {name!r} are not finite (written "
                              "before steps were checked); starting again from the initial "
                              "weights", RuntimeWarning, stacklevel=2)
                weights = initial
            snapshot = Snapshot(version, frozenset(seqs), weights, weights is initial)
            self._remember(name, snapshot)
            return snapshot
        raise StorageError(f"could not read reranker weights {name!r}: too much contention")

    def _remember(self, name: str, snapshot: Snapshot) -> None:
        """Cache a snapshot, counting its queued steps too; users evicted to make room have
        their queued steps logged."""
        queued = self._pending.get(name)
        size = snapshot.nbytes + (self.model.nbytes(queued[1]) if queued else 0)
        self._cache.put(name, snapshot, size, on_evict=self._evicted)

    def _evicted(self, name: str, _snapshot: Snapshot) -> None:
        """Log the queued steps of weights evicted from the cache (by any owner's put)."""
        with self._lock:
            queued = self._pending.pop(name, None)
        if queued is not None:
            self.store.append_state_delta(name, self._delta(queued[1], queued[0]))

    def current(self, name: str, dim: int) -> Any:
        """The weights last seen by this process (gradients need not be perfectly fresh)."""
        cached = self._cache.get(name)
        return cached.weights if cached is not None else self.load(name, dim)

    def add(self, name: str, grads: Any) -> bool:
        """Queue one example's gradient; log a step when the queue holds `batch` examples.

        Gradients in a batch are summed (not averaged), so batching changes how often the
        store is written, not how fast the weights learn. Returns True when a step was logged.
        """
        self._check(name, grads)
        return self._queue(name, grads)

    def add_for_result(self, name: str, grads: Any, result_id: str, user_id: str) -> bool:
        """`add` for one search result's feedback, after claiming the result; False (nothing
        queued or logged) if it already had its feedback. Unbatched, the claim and the
        logged step are one transaction: a crash keeps both or neither."""
        self._check(name, grads)
        if self.batch > 1:  # queued gradients live in memory until their step anyway
            if not self.store.claim_feedback(result_id, user_id):
                return False
            self._queue(name, grads)
            return True
        if not self.store.claim_feedback(result_id, user_id, (name, self._delta(grads, 1))):
            return False
        self._compact_if_due(name, grads)
        return True

    def _check(self, name: str, grads: Any) -> None:
        """Refuse a step that is not finite or could make the weights so (a query's or a
        memory's vectors held NaN or inf): every user of these weights would rank by NaN.
        NaN fails the comparison too."""
        cached = self._cache.get(name)
        reach = self.model.reach(cached.weights if cached else None, grads, self.learning_rate)
        if not reach < _FLOAT32_MAX:
            raise FeedbackError("feedback refused: its reranker step is not finite (the "
                                "query's or a memory's vectors hold NaN or inf); nothing "
                                "was learned or recorded")

    def _queue(self, name: str, grads: Any) -> bool:
        """Add one example to the name's queue; log the queue as a step once it is full."""
        with self._lock:
            queued = self._pending.pop(name, None)
            count, summed = (queued[0] + 1, self.model.add(queued[1], grads)) if queued \
                else (1, grads)
            full = count >= self.batch
            if not full:
                self._pending[name] = (count, summed)
        if full:
            self._step(name, summed, count)
        elif (cached := self._cache.get(name)) is not None:
            self._remember(name, cached)  # counted again, with the queued step
        return full

    def flush(self) -> None:
        """Log every queued gradient now (called on close)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for name, (count, grads) in pending.items():
            self._step(name, grads, count)

    def discard(self, name: str) -> None:
        """Drop the gradients queued and the weights cached for `name` (its owner was
        forgotten)."""
        with self._lock:
            self._pending.pop(name, None)
        self._cache.pop(name)

    def _step(self, name: str, grads: Any, count: int) -> None:
        self.store.append_state_delta(name, self._delta(grads, count))
        self._compact_if_due(name, grads)

    def _delta(self, grads: Any, count: int) -> bytes:
        """The logged form of a step: the gradients scaled by -lr."""
        return self.model.encode_step(grads, count, self.learning_rate)

    def _compact_if_due(self, name: str, grads: Any) -> None:
        if len(self.store.state_log(name)[1]) >= self.compact_every:
            self.compact(name, self.model.dim_of(grads))

    def compact(self, name: str, dim: int) -> bool:
        """Fold the logged steps into a new base; False when another writer did it first.

        The base written and the steps deleted come from one snapshot, so each logged step
        ends up in the weights exactly once.
        """
        snapshot = self._snapshot(name, dim)
        if not self.store.compact_state(name, snapshot.version,
                                        self.model.encode(snapshot.weights),
                                        sorted(snapshot.seen)):
            return False
        self._remember(name, Snapshot(snapshot.version + 1, frozenset(), snapshot.weights,
                                      snapshot.shared))
        return True
