"""Retrospective reflection: RMM's learned reranker, its REINFORCE step and its stored weights.

The reranker maps the query and each candidate's vectors through identity-plus-linear maps,
q' = q + W_q q and m' = m + W_m m, and scores a memory by its best row, max over rows q'.m'
(a memory is stored as its key's vector plus its turns' vectors; the retriever also takes the
best row). With W = 0 that score equals the retriever's dense cosine.
"""

from __future__ import annotations

import struct
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, NamedTuple

import numpy as np

from .config import MemoryConfig
from .errors import FeedbackError, InvalidInputError, StorageError
from .lru import ByteLRU
from .storage.base import Store, user_state_name
from .types import Memory, MemoryHit, SearchResult


class Combine(NamedTuple):
    """One way of joining the scores (below): `score(f, r, r0, mix)`, affine in r with the
    slope `slope(mix)`, which the gradient needs."""

    score: Callable[[np.ndarray, np.ndarray, np.ndarray, float], np.ndarray]
    slope: Callable[[float], float]


# How the reranker's score r joins the fused retrieval score f of the K candidates (r0 is r
# with W = 0, i.e. the dense cosine, so r - r0 is exactly what the reranker learned).
# "zscore" (default) standardises f over the candidates and adds mix * (r - r0): an untrained
# reranker keeps the retriever's order, and the temperature acts on a fixed scale. Fused
# scores of 20 candidates sit within ~0.1 of each other, so on raw f ("residual") a
# temperature of 0.5 samples almost uniformly. Measured on LoCoMo dev (train conv-26/30/41,
# test conv-42/43, one oracle pass, R_any@5 81.2 before; `rmm bench rerank --set
# reranker_combine=... --set reranker_mix=...`): zscore mix 10 -> 80.9..82.2 over 4 seeds;
# zscore mix 5 -> 81.2; residual mix 0.5 / 2 / 5 -> 81.2 / 81.2 / 80.4; mix 30 -> 72.9.
# No setting gains more than noise on held-out conversations; zscore/10 was the best.
# Adam (lr 1e-3) in place of plain SGD moves the weights far more and does worse (before
# 84.1 R_any@5 / 82.9 Rtok@1000): mix 10 -> 79.0 / 67.3; mix 1 -> 83.3 / 81.2; mix 0.2 ->
# 83.6 / 82.4. So the step stays W -= lr * gradient.
COMBINE: dict[str, Combine] = {
    "zscore": Combine(lambda f, r, r0, mix: (f - f.mean()) / (f.std() + 1e-6) + mix * (r - r0),
                      lambda mix: mix),
    "residual": Combine(lambda f, r, r0, mix: f + mix * (r - r0), lambda mix: mix),
    "blend": Combine(lambda f, r, r0, mix: (1.0 - mix) * f + mix * r, lambda mix: mix),
    # q'.m' alone, for texts that have no fused score
    "reranker": Combine(lambda f, r, r0, mix: r, lambda mix: 1.0),
}


_FLOAT32_MAX = float(np.finfo(np.float32).max)
_WEIGHTS_MAGIC = b"RMMW"
_WEIGHTS_HEADER = struct.Struct("<4sqq")


@dataclass(slots=True)
class Weights:
    """The two learned maps (zero = identity reranker) and how many steps trained them."""

    w_q: np.ndarray  # (d, d) float32
    w_m: np.ndarray
    steps: int = 0

    @classmethod
    def zeros(cls, dim: int) -> Weights:
        return cls(np.zeros((dim, dim), np.float32), np.zeros((dim, dim), np.float32))

    @property
    def dim(self) -> int:
        return int(self.w_q.shape[0])

    @property
    def nbytes(self) -> int:
        return self.w_q.nbytes + self.w_m.nbytes

    def is_finite(self) -> bool:
        """No NaN or inf in either map."""
        return bool(np.isfinite(self.w_q).all() and np.isfinite(self.w_m).all())

    def to_bytes(self) -> bytes:
        """A fixed binary layout (magic, dim, steps, then both float32 matrices); no pickle.

        Not `.npz`: numpy parses its headers with `ast.literal_eval`, which CPython 3.11.7
        can fail ("AST constructor recursion depth mismatch") when threads do it at once.
        """
        head = _WEIGHTS_HEADER.pack(_WEIGHTS_MAGIC, self.dim, self.steps)
        return head + b"".join(np.ascontiguousarray(w, np.float32).tobytes()
                               for w in (self.w_q, self.w_m))

    @classmethod
    def from_bytes(cls, blob: bytes) -> Weights:
        size = _WEIGHTS_HEADER.size
        try:
            magic, dim, steps = _WEIGHTS_HEADER.unpack(blob[:size])
        except struct.error as exc:
            raise StorageError(f"stored reranker weights are unreadable: {exc}") from exc
        if magic != _WEIGHTS_MAGIC or len(blob) != size + 8 * dim * dim or dim <= 0:
            raise StorageError("stored reranker weights are unreadable: bad header or length")
        matrices = np.frombuffer(blob, dtype=np.float32, offset=size).reshape(2, dim, dim)
        return cls(matrices[0].copy(), matrices[1].copy(), int(steps))


@dataclass(slots=True)
class LowRank:
    """A d x d matrix kept as the sum of outer products left[k] right[k]^T (rank <= K).

    A feedback step's gradient has rank one per matrix, so steps are stored this small.
    """

    left: np.ndarray  # (K, d)
    right: np.ndarray  # (K, d)

    @classmethod
    def outer(cls, left: np.ndarray, right: np.ndarray) -> LowRank:
        return cls(np.asarray(left, np.float32)[None, :], np.asarray(right, np.float32)[None, :])

    def matrix(self) -> np.ndarray:
        return np.ascontiguousarray(self.left.T @ self.right, dtype=np.float32)

    def __add__(self, other: LowRank) -> LowRank:
        return LowRank(np.concatenate([self.left, other.left]),
                       np.concatenate([self.right, other.right]))

    def scaled(self, factor: float) -> LowRank:
        return LowRank(self.left * np.float32(factor), self.right)

    def is_finite(self) -> bool:
        return bool(np.isfinite(self.left).all() and np.isfinite(self.right).all())


_DELTA_MAGIC = b"RMMD"
_DELTA_HEADER = struct.Struct("<4sqqq")  # magic, dim, rank, examples


def delta_to_bytes(d_q: LowRank, d_m: LowRank, examples: int) -> bytes:
    """One logged step: the updates of W_q and W_m (already scaled by -lr), low rank."""
    dim, rank_q, rank_m = d_q.left.shape[1], len(d_q.left), len(d_m.left)
    if rank_q != rank_m:  # pad the smaller with zero rows so both share one rank
        pad = LowRank(np.zeros((abs(rank_q - rank_m), dim), np.float32),
                      np.zeros((abs(rank_q - rank_m), dim), np.float32))
        d_q, d_m = (d_q + pad, d_m) if rank_q < rank_m else (d_q, d_m + pad)
    head = _DELTA_HEADER.pack(_DELTA_MAGIC, dim, len(d_q.left), examples)
    return head + b"".join(np.ascontiguousarray(a, np.float32).tobytes()
                           for a in (d_q.left, d_q.right, d_m.left, d_m.right))


def delta_from_bytes(blob: bytes) -> tuple[LowRank, LowRank, int]:
    size = _DELTA_HEADER.size
    try:
        magic, dim, rank, examples = _DELTA_HEADER.unpack(blob[:size])
    except struct.error as exc:
        raise StorageError(f"a logged reranker step is unreadable: {exc}") from exc
    if magic != _DELTA_MAGIC or len(blob) != size + 16 * rank * dim:
        raise StorageError("a logged reranker step is unreadable: bad header or length")
    parts = np.frombuffer(blob, dtype=np.float32, offset=size).reshape(4, rank, dim)
    return LowRank(parts[0], parts[1]), LowRank(parts[2], parts[3]), int(examples)


@dataclass(slots=True)
class Ranking:
    """One rerank of K candidates: its inputs (kept for the gradient) and its choice."""

    query: np.ndarray  # (d,)
    rows: np.ndarray  # (K, R, d) each candidate's vectors, zero-padded
    mask: np.ndarray  # (K, R) True where a row is real
    fused: np.ndarray  # (K,) retrieval scores
    order: list[int]  # candidate positions, the kept ones first, in kept order
    kept: int
    scores: np.ndarray  # (K,) combined scores, as ranked
    name: str = ""  # the weights this ranking used (scope)
    user_id: str = ""
    ids: list[str] = field(default_factory=list)  # memory id of each candidate position


def pack_rows(vectors: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Stack ragged per-candidate vector lists into a zero-padded (K, R, d) array and mask."""
    depth = max(len(v) for v in vectors)
    dim = vectors[0].shape[1]
    rows = np.zeros((len(vectors), depth, dim), dtype=np.float32)
    mask = np.zeros((len(vectors), depth), dtype=bool)
    for i, v in enumerate(vectors):
        rows[i, : len(v)] = v
        mask[i, : len(v)] = True
    return rows, mask


class Reranker:
    """Scores, selects and computes REINFORCE gradients; holds settings, never weights.

    `rng` draws the exploration noise (seed it for a reproducible run)."""

    def __init__(self, *, temperature: float = 0.5, mix: float = 10.0, baseline: float = 0.5,
                 combine: str = "zscore", rng: np.random.Generator | None = None) -> None:
        if combine not in COMBINE:
            raise InvalidInputError(
                f"unknown reranker_combine {combine!r}; choose from {sorted(COMBINE)}")
        self.temperature = temperature
        self.mix = mix
        self.baseline = baseline
        self.combine = COMBINE[combine]
        self.rng = rng if rng is not None else np.random.default_rng()

    def scores(self, weights: Weights, query: np.ndarray, rows: np.ndarray,
               mask: np.ndarray, fused: np.ndarray) -> np.ndarray:
        """Combined score of each candidate."""
        _, sims, r0 = _row_scores(weights, query, rows, mask)
        return self.combine.score(np.asarray(fused, np.float32),
                                  sims.max(axis=1).astype(np.float32), r0, self.mix)

    def rank(self, weights: Weights, query_vec: np.ndarray, vectors: Sequence[np.ndarray],
             fused: Sequence[float], keep: int, *, explore: bool = False) -> Ranking:
        """Order the candidates and keep `keep`; with `explore`, Gumbel-top-k sampling."""
        query = np.asarray(query_vec, dtype=np.float32)
        rows, mask = pack_rows(vectors)
        fused_a = np.asarray(fused, dtype=np.float32)
        scores = self.scores(weights, query, rows, mask, fused_a)
        keys = scores / self.temperature
        if explore:
            uniform = self.rng.random(keys.shape, dtype=np.float32).clip(1e-12, 1 - 1e-7)
            keys = keys - np.log(-np.log(uniform))
        keep = min(keep, len(vectors))
        picked = np.argsort(-keys, kind="stable")[:keep].tolist()
        chosen = set(picked)
        rest = [i for i in np.argsort(-scores, kind="stable").tolist() if i not in chosen]
        return Ranking(query, rows, mask, fused_a, picked + rest, keep, scores)

    def gradient(self, weights: Weights, ranking: Ranking,
                 rewards: Sequence[float]) -> tuple[LowRank, LowRank]:
        """Gradient of the REINFORCE loss -sum_j (reward_j - b) log P(pick j | earlier picks).

        The kept list is a Plackett-Luce draw (what Gumbel-top-k samples), so each pick is
        credited with its own reward under its own conditional probability. The weights
        reach the loss only through each candidate's best-row score r_i = m'_i . q', so the
        gradient is two outer products: dL/dW_q = (sum_i g_i m'_i) q^T and
        dL/dW_m = q' (sum_i g_i m_i)^T, with g_i = dL/dr_i. Each pick j adds
        (reward_j - b) (softmax over the remaining logits - onehot(j)) to dL/dlogits, and
        the logits are affine in r (slope `Combine.slope / temperature`).
        """
        query, rows = ranking.query, ranking.rows
        q1, sims, r0 = _row_scores(weights, query, rows, ranking.mask)
        best = sims.argmax(axis=1)
        logits = self.combine.score(ranking.fused, sims.max(axis=1).astype(np.float32), r0,
                                    self.mix) / self.temperature
        d_logits = np.zeros(len(logits), np.float32)
        remaining = np.ones(len(logits), dtype=bool)
        for j, reward in zip(ranking.order[: ranking.kept], rewards):
            advantage = np.float32(reward - self.baseline)
            d_logits[remaining] += advantage * _softmax(logits[remaining])
            d_logits[j] -= advantage
            remaining[j] = False
        g = d_logits * np.float32(self.combine.slope(self.mix) / self.temperature)
        g_m = g @ rows[np.arange(len(best)), best]  # sum_i g_i m_i
        return LowRank.outer(g_m + weights.w_m @ g_m, query), LowRank.outer(q1, g_m)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def _row_scores(weights: Weights, query: np.ndarray, rows: np.ndarray,
                mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The forward pass: q', every row's q'.m' (-inf where padded) and r0 = max over rows
    of q.m. Matrix-vector products only: q'.(m + W_m m) = (q' + W_m^T q').m."""
    flat = rows.reshape(-1, rows.shape[-1])
    q1 = query + weights.w_q @ query
    sims = np.where(mask, (flat @ (q1 + weights.w_m.T @ q1)).reshape(mask.shape), -np.inf)
    r0 = np.where(mask, (flat @ query).reshape(mask.shape), -np.inf).max(axis=1)
    return q1, sims, r0.astype(np.float32)


def rewards_for(ranking: Ranking, cited: Sequence[str],
                shown: Sequence[str] | None = None) -> list[float]:
    """+1 for each kept memory the answer cited, -1 for each it did not (all -1 if none).

    `shown` are the ids the caller saw (kept plus any linked extras); citing one of those
    that the reranker did not choose is allowed and simply not scored.
    """
    kept = [ranking.ids[i] for i in ranking.order[: ranking.kept]]
    unknown = sorted(set(cited) - set(kept) - set(shown or ()))
    if unknown:
        raise FeedbackError(f"cited ids {unknown[:5]} are not among this result's hits")
    cited_set = set(cited)
    return [1.0 if mid in cited_set else -1.0 for mid in kept]


@cache
def _untrained(dim: int) -> Weights:
    """The zero (identity) weights, one shared instance per dimension: a user who never gave
    feedback costs no matrices of their own. Never changed in place (steps make new ones)."""
    return Weights.zeros(dim)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Weights as read from the store: the base of `version` plus exactly the steps `seen`."""

    version: int
    seen: frozenset[int]
    weights: Weights

    @property
    def nbytes(self) -> int:
        """Memory held: its own matrices (none for untrained weights) and its bookkeeping."""
        own = 0 if self.weights is _untrained(self.weights.dim) else self.weights.nbytes
        return own + 256 + 64 * len(self.seen)


class WeightStore:
    """Reranker weights in the store: a base blob plus a log of small low-rank steps.

    A step appends its update (two rank-one matrices, a few KB) and never conflicts with
    another, so concurrent steps from threads or processes are all kept; every
    `compact_every` steps the log is folded into a new base (compare-and-set, with the
    folded steps deleted in the same transaction). Weights read are cached up to
    `cache_bytes` (least recently used evicted, their queued steps logged first).
    """

    def __init__(self, store: Store, *, learning_rate: float = 1e-3, batch: int = 1,
                 compact_every: int = 64, cache_bytes: int = 64 * 2**20,
                 cache: ByteLRU | None = None) -> None:
        self.store = store
        self.learning_rate = learning_rate
        self.batch = batch
        self.compact_every = compact_every
        self._cache: ByteLRU[Snapshot] = cache if cache is not None else ByteLRU(cache_bytes)
        self._pending: dict[str, tuple[int, LowRank, LowRank]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def name(scope: str, user_id: str) -> str:
        return "reranker/global" if scope == "global" else user_state_name(user_id, "reranker")

    def load(self, name: str, dim: int) -> Weights:
        """The newest weights: base plus every logged step (zeros before any feedback)."""
        return self._snapshot(name, dim).weights

    def _snapshot(self, name: str, dim: int) -> Snapshot:
        """The newest weights with the version and steps they hold, read as one consistent
        whole (another thread may replace the cached one at any time).

        Folds only the steps this process has not seen; a compaction elsewhere (new base
        version) means a full reload.
        """
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
                weights = Weights.from_bytes(blob) if blob else _untrained(dim)
                seen = frozenset()
            new = [q for q in seqs if q not in seen]
            if new:
                deltas = self.store.state_deltas(name, new)
                if len(deltas) < len(new):
                    self._cache.pop(name)
                    continue  # folded into a newer base meanwhile
                weights = _apply(weights, [deltas[q] for q in new], name)
            if weights.dim != dim:
                raise StorageError(f"stored reranker weights {name!r} have dimension "
                                   f"{weights.dim}, the embedder {dim}: the embedding model "
                                   "changed")
            unchecked = cached is None or weights is not cached.weights
            if unchecked and not weights.is_finite():
                warnings.warn(f"stored reranker weights {name!r} are not finite (written "
                              "before steps were checked); starting again from zero",
                              RuntimeWarning, stacklevel=2)
                weights = _untrained(dim)
            snapshot = Snapshot(version, frozenset(seqs), weights)
            self._remember(name, snapshot)
            return snapshot
        raise StorageError(f"could not read reranker weights {name!r}: too much contention")

    def _remember(self, name: str, snapshot: Snapshot) -> None:
        """Cache a snapshot, counting its queued steps too; users evicted to make room have
        their queued steps logged."""
        queued = self._pending.get(name)
        size = snapshot.nbytes + (sum(a.nbytes for g in queued[1:] for a in (g.left, g.right))
                                  if queued else 0)
        self._cache.put(name, snapshot, size, on_evict=self._evicted)

    def _evicted(self, name: str, _snapshot: Snapshot) -> None:
        """Log the queued steps of weights evicted from the cache (by any owner's put)."""
        with self._lock:
            queued = self._pending.pop(name, None)
        if queued is not None:
            count, g_q, g_m = queued
            self.store.append_state_delta(name, self._delta(g_q, g_m, count))

    def current(self, name: str, dim: int) -> Weights:
        """The weights last seen by this process (gradients need not be perfectly fresh)."""
        cached = self._cache.get(name)
        return cached.weights if cached is not None else self.load(name, dim)

    def add(self, name: str, grads: tuple[LowRank, LowRank]) -> bool:
        """Queue one example's gradient; log a step when the queue holds `batch` examples.

        Gradients in a batch are summed (not averaged), so batching changes how often the
        store is written, not how fast the weights learn. Returns True when a step was logged.
        """
        self._check(name, grads)
        return self._queue(name, grads)

    def add_for_result(self, name: str, grads: tuple[LowRank, LowRank], result_id: str,
                       user_id: str) -> bool:
        """`add` for one search result's feedback, after claiming the result; False (nothing
        queued or logged) if it already had its feedback. Unbatched, the claim and the
        logged step are one transaction: a crash keeps both or neither."""
        self._check(name, grads)
        if self.batch > 1:  # queued gradients live in memory until their step anyway
            if not self.store.claim_feedback(result_id, user_id):
                return False
            self._queue(name, grads)
            return True
        if not self.store.claim_feedback(result_id, user_id, (name, self._delta(*grads, 1))):
            return False
        self._compact_if_due(name, grads[0].left.shape[1])
        return True

    def _check(self, name: str, grads: tuple[LowRank, LowRank]) -> None:
        """Refuse a step that is not finite or could make the weights so (a query's or a
        memory's vectors held NaN or inf): every user of these weights would rank by NaN.

        Bounds each entry of W + update by max|W| + lr * sum_k max|left_k| max|right_k|, so
        no d x d matrix is built; NaN fails the comparison too."""
        cached = self._cache.get(name)
        current = (cached.weights.w_q, cached.weights.w_m) if cached else (None, None)
        for grad, weights in zip(grads, current):
            reach = self.learning_rate * float(np.abs(grad.left).max(axis=1)
                                               @ np.abs(grad.right).max(axis=1))
            if weights is not None:
                reach += float(np.abs(weights).max())
            if not reach < _FLOAT32_MAX:
                raise FeedbackError("feedback refused: its reranker step is not finite (the "
                                    "query's or a memory's vectors hold NaN or inf); nothing "
                                    "was learned or recorded")

    def _queue(self, name: str, grads: tuple[LowRank, LowRank]) -> bool:
        """Add one example to the name's queue; log the queue as a step once it is full."""
        with self._lock:
            queued = self._pending.pop(name, None)
            count, g_q, g_m = (queued[0] + 1, queued[1] + grads[0], queued[2] + grads[1]) \
                if queued else (1, *grads)
            full = count >= self.batch
            if not full:
                self._pending[name] = (count, g_q, g_m)
        if full:
            self._step(name, g_q, g_m, count)
        elif (cached := self._cache.get(name)) is not None:
            self._remember(name, cached)  # counted again, with the queued step
        return full

    def flush(self) -> None:
        """Log every queued gradient now (called on close)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for name, (count, g_q, g_m) in pending.items():
            self._step(name, g_q, g_m, count)

    def discard(self, name: str) -> None:
        """Drop the gradients queued and the weights cached for `name` (its owner was
        forgotten)."""
        with self._lock:
            self._pending.pop(name, None)
        self._cache.pop(name)

    def _step(self, name: str, g_q: LowRank, g_m: LowRank, count: int) -> None:
        self.store.append_state_delta(name, self._delta(g_q, g_m, count))
        self._compact_if_due(name, g_q.left.shape[1])

    def _delta(self, g_q: LowRank, g_m: LowRank, count: int) -> bytes:
        """The logged form of a step: the gradients scaled by -lr."""
        rate = -self.learning_rate
        return delta_to_bytes(g_q.scaled(rate), g_m.scaled(rate), count)

    def _compact_if_due(self, name: str, dim: int) -> None:
        if len(self.store.state_log(name)[1]) >= self.compact_every:
            self.compact(name, dim)

    def compact(self, name: str, dim: int) -> bool:
        """Fold the logged steps into a new base; False when another writer did it first.

        The base written and the steps deleted come from one snapshot, so each logged step
        ends up in the weights exactly once.
        """
        snapshot = self._snapshot(name, dim)
        if not self.store.compact_state(name, snapshot.version, snapshot.weights.to_bytes(),
                                        sorted(snapshot.seen)):
            return False
        self._remember(name, Snapshot(snapshot.version + 1, frozenset(), snapshot.weights))
        return True


def _apply(weights: Weights, blobs: Sequence[bytes], name: str) -> Weights:
    """The weights with logged steps added (all of them in one matrix product each); a step
    that is not finite (logged before steps were checked) is left out, with a warning."""
    steps = [delta_from_bytes(blob) for blob in blobs]
    finite = [s for s in steps if s[0].is_finite() and s[1].is_finite()]
    if len(finite) < len(steps):
        warnings.warn(f"{len(steps) - len(finite)} logged step(s) of reranker weights "
                      f"{name!r} are not finite and are ignored", RuntimeWarning, stacklevel=3)
    if not finite:
        return weights
    d_q = sum((q for q, _, _ in finite[1:]), finite[0][0])
    d_m = sum((m for _, m, _ in finite[1:]), finite[0][1])
    return Weights(weights.w_q + d_q.matrix(), weights.w_m + d_m.matrix(),
                   weights.steps + sum(n for _, _, n in finite))


class LearnedReranker:
    """What `ReflectiveMemory` calls: rerank a search's candidates, learn from its citations."""

    def __init__(self, store: Store, config: MemoryConfig, cache: ByteLRU | None = None
                 ) -> None:
        self.store = store
        self.scope = config.reranker_scope
        self.reranker = Reranker(temperature=config.reranker_temperature,
                                 mix=config.reranker_mix, baseline=config.reranker_baseline,
                                 combine=config.reranker_combine,
                                 rng=np.random.default_rng(config.reranker_seed))
        self.weights = WeightStore(store, learning_rate=config.reranker_learning_rate,
                                   batch=config.reranker_batch,
                                   cache_bytes=config.reranker_cache_bytes, cache=cache)

    def rerank(self, user_id: str, query_vec: np.ndarray, candidates: Sequence[MemoryHit],
               vectors: Sequence[np.ndarray], keep: int, *, explore: bool = False
               ) -> tuple[list[MemoryHit], Ranking | None]:
        """The best `keep` candidates under the current weights, and what feedback needs.

        `vectors` are each candidate's vector rows (its own, then its turns'), as indexed.
        """
        if not candidates:
            return [], None
        name = WeightStore.name(self.scope, user_id)
        weights = self.weights.load(name, len(query_vec))
        ranking = self.reranker.rank(weights, query_vec, vectors,
                                     [h.score for h in candidates], keep, explore=explore)
        ranking.name, ranking.user_id = name, user_id
        ranking.ids = [h.memory.id for h in candidates]
        hits = [MemoryHit(candidates[i].memory, float(ranking.scores[i]), candidates[i].text,
                          rank) for rank, i in enumerate(ranking.order[:ranking.kept])]
        return hits, ranking

    def feedback(self, result: SearchResult, cited: Sequence[Any]) -> None:
        """One REINFORCE step (queued when batching); a result takes feedback once."""
        if not isinstance(result, SearchResult):
            raise InvalidInputError(f"feedback needs a SearchResult, not {type(result).__name__}")
        ranking = result.state.get("ranking")
        if not isinstance(ranking, Ranking):
            raise FeedbackError("this search result has no hits: there is nothing to learn from")
        rewards = rewards_for(ranking, cited_ids(cited), [h.memory.id for h in result.hits])
        # the gradient before the claim: if it fails, the result can still take feedback
        weights = self.weights.current(ranking.name, int(ranking.query.shape[0]))
        grads = self.reranker.gradient(weights, ranking, rewards)
        if not self.weights.add_for_result(ranking.name, grads, result.id, result.user_id):
            raise FeedbackError(f"search result {result.id} already had its feedback")

    def learned_scores(self, user_id: str, query_vec: np.ndarray,
                       vectors: Sequence[np.ndarray]) -> list[float]:
        """RMM's score q'.m' alone (no retrieval part) for arbitrary items' vector rows."""
        weights = self.weights.load(WeightStore.name(self.scope, user_id), len(query_vec))
        rows, mask = pack_rows(list(vectors))
        scores = Reranker(combine="reranker").scores(
            weights, np.asarray(query_vec, np.float32), rows, mask, np.zeros(len(vectors)))
        return [float(s) for s in scores]

    def flush(self) -> None:
        self.weights.flush()

    def forget(self, user_id: str) -> None:
        """Drop the user's queued feedback, so that no step is logged for them after a forget
        (`Store.forget` erases what was logged)."""
        self.weights.discard(WeightStore.name("user", user_id))


def cited_ids(cited: Any) -> list[str]:
    """Memory ids from a list of ids, `Memory`s or `MemoryHit`s."""
    if isinstance(cited, (str, bytes)) or not isinstance(cited, Sequence):
        raise InvalidInputError(f"cited must be a list of memory ids, not {type(cited).__name__}")
    out = []
    for item in cited:
        if isinstance(item, MemoryHit):
            item = item.memory.id
        elif isinstance(item, Memory):
            item = item.id
        if not isinstance(item, str):
            raise InvalidInputError(f"cited holds a {type(item).__name__}, not a memory id")
        out.append(item)
    return out
