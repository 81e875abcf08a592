"""The REINFORCE policy every learned reranker shares: Gumbel-top-k picks over its scores
and the gradient of the picks' log-probability with respect to those scores."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(slots=True)
class Ranking:
    """One rerank of K candidates: its inputs (kept for the gradient) and its choice."""

    fused: np.ndarray  # (K,) retrieval scores
    order: list[int]  # candidate positions, the kept ones first, in kept order
    kept: int
    scores: np.ndarray  # (K,) combined scores, as ranked
    name: str = ""  # the weights this ranking used (scope)
    user_id: str = ""
    ids: list[str] = field(default_factory=list)  # memory id of each candidate position
    query: np.ndarray | None = None  # (d,) the bilinear scorer's inputs
    rows: np.ndarray | None = None  # (K, R, d) each candidate's vectors, zero-padded
    mask: np.ndarray | None = None  # (K, R) True where a row is real
    features: np.ndarray | None = None  # (K, F) the feature scorer's inputs


def select(scores: np.ndarray, keep: int, temperature: float,
           rng: np.random.Generator | None, explore: bool) -> list[int]:
    """Candidate positions, the `keep` picked first (Gumbel-top-k over scores / temperature
    when exploring, else the best), then the rest by score."""
    keys = scores / temperature
    if explore and rng is not None:
        uniform = rng.random(keys.shape, dtype=np.float32).clip(1e-12, 1 - 1e-7)
        keys = keys - np.log(-np.log(uniform))
    keep = min(keep, len(scores))
    picked = np.argsort(-keys, kind="stable")[:keep].tolist()
    chosen = set(picked)
    return picked + [i for i in np.argsort(-scores, kind="stable").tolist() if i not in chosen]


def logit_gradient(logits: np.ndarray, picks: Sequence[int], rewards: Sequence[float],
                   baseline: float) -> np.ndarray:
    """dL/dlogits of the REINFORCE loss -sum_j (reward_j - b) log P(pick j | earlier picks).

    The kept list is a Plackett-Luce draw (what Gumbel-top-k samples), so each pick is
    credited with its own reward under its own conditional probability: each pick j adds
    (reward_j - b) (softmax over the remaining logits - onehot(j)).
    """
    d_logits = np.zeros(len(logits), np.float32)
    remaining = np.ones(len(logits), dtype=bool)
    for j, reward in zip(picks, rewards):
        advantage = np.float32(reward - baseline)
        d_logits[remaining] += advantage * softmax(logits[remaining])
        d_logits[j] -= advantage
        remaining[j] = False
    return d_logits


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def zscore(values: np.ndarray) -> np.ndarray:
    """Values standardised over the candidates, the first axis (all zero when equal)."""
    values = np.asarray(values, np.float32)
    return (values - values.mean(axis=0)) / (values.std(axis=0) + 1e-6)
