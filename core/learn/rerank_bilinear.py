"""RMM's bilinear reranker (`reranker.kind="rmm"`): the paper's maps, their gradient and stored
form.

The reranker maps the query and each candidate's vectors through identity-plus-linear maps,
q' = q + W_q q and m' = m + W_m m, and scores a memory by its best row, max over rows q'.m'
(a memory is stored as its key's vector plus its turns' vectors; the retriever also takes the
best row). With W = 0 that score equals the retriever's dense cosine.
"""

from __future__ import annotations

import struct
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import numpy as np

from ..errors import InvalidInputError, StorageError
from .rerank_policy import Ranking, logit_gradient, select, zscore


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
# reranker.combine=... --set reranker.mix=...`): zscore mix 10 -> 80.9..82.2 over 4 seeds;
# zscore mix 5 -> 81.2; residual mix 0.5 / 2 / 5 -> 81.2 / 81.2 / 80.4; mix 30 -> 72.9.
# No setting gains more than noise on held-out conversations; zscore/10 was the best.
# Adam (lr 1e-3) in place of plain SGD moves the weights far more and does worse (before
# 84.1 R_any@5 / 82.9 Rtok@1000): mix 10 -> 79.0 / 67.3; mix 1 -> 83.3 / 81.2; mix 0.2 ->
# 83.6 / 82.4. So the step stays W -= lr * gradient.
COMBINE: dict[str, Combine] = {
    "zscore": Combine(lambda f, r, r0, mix: zscore(f) + mix * (r - r0),
                      lambda mix: mix),
    "residual": Combine(lambda f, r, r0, mix: f + mix * (r - r0), lambda mix: mix),
    "blend": Combine(lambda f, r, r0, mix: (1.0 - mix) * f + mix * r, lambda mix: mix),
    # q'.m' alone, for texts that have no fused score
    "reranker": Combine(lambda f, r, r0, mix: r, lambda mix: 1.0),
}


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
                f"unknown reranker.combine {combine!r}; choose from {sorted(COMBINE)}")
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
        order = select(scores, keep, self.temperature, self.rng, explore)
        return Ranking(fused_a, order, min(keep, len(vectors)), scores, query=query, rows=rows,
                       mask=mask)

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
        d_logits = logit_gradient(logits, ranking.order[: ranking.kept], rewards,
                                  self.baseline)
        g = d_logits * np.float32(self.combine.slope(self.mix) / self.temperature)
        g_m = g @ rows[np.arange(len(best)), best]  # sum_i g_i m_i
        return LowRank.outer(g_m + weights.w_m @ g_m, query), LowRank.outer(q1, g_m)


def _row_scores(weights: Weights, query: np.ndarray, rows: np.ndarray,
                mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The forward pass: q', every row's q'.m' (-inf where padded) and r0 = max over rows
    of q.m. Matrix-vector products only: q'.(m + W_m m) = (q' + W_m^T q').m."""
    flat = rows.reshape(-1, rows.shape[-1])
    q1 = query + weights.w_q @ query
    sims = np.where(mask, (flat @ (q1 + weights.w_m.T @ q1)).reshape(mask.shape), -np.inf)
    r0 = np.where(mask, (flat @ query).reshape(mask.shape), -np.inf).max(axis=1)
    return q1, sims, r0.astype(np.float32)


@cache
def _untrained(dim: int) -> Weights:
    """The zero (identity) weights, one shared instance per dimension: a user who never gave
    feedback costs no matrices of their own. Never changed in place (steps make new ones)."""
    return Weights.zeros(dim)


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


Grads = tuple[LowRank, LowRank]


class BilinearModel:
    """How the store keeps these weights: a `Weights` blob plus logged low-rank steps."""

    kind = "reranker"

    def initial(self, dim: int) -> Weights:
        return _untrained(dim)

    def decode(self, blob: bytes) -> Weights:
        return Weights.from_bytes(blob)

    def encode(self, weights: Weights) -> bytes:
        return weights.to_bytes()

    def encode_step(self, grads: Grads, count: int, rate: float) -> bytes:
        """The logged form of a step: the gradients scaled by -rate."""
        return delta_to_bytes(grads[0].scaled(-rate), grads[1].scaled(-rate), count)

    def apply(self, weights: Weights, blobs: Sequence[bytes], name: str) -> Weights:
        return _apply(weights, blobs, name)

    def add(self, a: Grads, b: Grads) -> Grads:
        return a[0] + b[0], a[1] + b[1]

    def dim_of(self, grads: Grads) -> int:
        return int(grads[0].left.shape[1])

    def nbytes(self, grads: Grads) -> int:
        return sum(a.nbytes for g in grads for a in (g.left, g.right))

    def reach(self, weights: Weights | None, grads: Grads, rate: float) -> float:
        """A bound on every entry of W + update: max|W| + rate * sum_k max|left_k|
        max|right_k| (no d x d matrix built; NaN propagates)."""
        reaches = [rate * float(np.abs(g.left).max(axis=1) @ np.abs(g.right).max(axis=1))
                   for g in grads]
        if weights is not None:
            reaches = [r + float(np.abs(w).max()) for r, w in zip(reaches, (weights.w_q,
                                                                            weights.w_m))]
        return float(np.max(reaches))  # NaN stays NaN
