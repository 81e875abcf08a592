"""Retrospective reflection: rerank a search's candidates and learn from an answer's citations.

`reranker.kind` chooses the scorer from `RERANKERS`: "features" (the hand-set fusion plus learned
weights over 15 retrieval and memory signals, pre-trained, the default), "rmm" (the
paper's bilinear maps over embeddings) or "none" (the hand-set fusion alone, learning
nothing). The scorers' maths live in `rerank_features` and `rerank_bilinear`, the policy
they share in `rerank_policy`, their stored weights in `rerank_store`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from ..config import MemoryConfig
from ..errors import FeedbackError, InvalidInputError
from ..lru import ByteLRU
from ..storage.base import Store
from ..types import Memory, MemoryHit, SearchResult
from .rerank_bilinear import (
    COMBINE,
    BilinearModel,
    LowRank,
    Reranker,
    Weights,
    delta_from_bytes,
    delta_to_bytes,
    pack_rows,
)
from .rerank_features import (
    FEATURES,
    FeatureModel,
    FeatureScorer,
    FeatureWeights,
    load_weights,
    shipped_weights,
)
from .rerank_policy import Ranking, select, zscore
from .rerank_store import WeightModel, WeightStore

__all__ = ["COMBINE", "FEATURES", "RERANKERS", "FeatureWeights", "LearnedReranker", "LowRank",
           "Ranking", "Reranker", "Weights", "WeightStore", "cited_ids", "delta_from_bytes",
           "delta_to_bytes", "rewards_for"]


class Scorer(Protocol):
    """One reranker: how it ranks K candidates, its gradient, and its stored weights."""

    model: WeightModel | None  # None: nothing learned, nothing stored

    def dim(self, query_vec: np.ndarray | None) -> int: ...
    def rank(self, weights: Any, query: str, query_vec: np.ndarray, hits: Sequence[MemoryHit],
             vectors: Sequence[np.ndarray], keep: int, explore: bool) -> Ranking: ...
    def gradient(self, weights: Any, ranking: Ranking, rewards: Sequence[float]) -> Any: ...
    def item_scores(self, weights: Any, query: str, query_vec: np.ndarray,
                    texts: Sequence[str], vectors: Sequence[np.ndarray]) -> list[float]: ...


class FeatureRanker:
    """`reranker.kind="features"`: `FeatureScorer` over weights that start from `start`."""

    def __init__(self, scorer: FeatureScorer, start: FeatureWeights | None) -> None:
        self.scorer, self.model = scorer, FeatureModel(start)

    def dim(self, query_vec: np.ndarray | None) -> int:
        return len(FEATURES)

    def rank(self, weights: FeatureWeights, query: str, query_vec: np.ndarray,
             hits: Sequence[MemoryHit], vectors: Sequence[np.ndarray], keep: int,
             explore: bool) -> Ranking:
        return self.scorer.rank(weights, query, query_vec, hits, vectors, keep, explore=explore)

    def gradient(self, weights: FeatureWeights, ranking: Ranking,
                 rewards: Sequence[float]) -> np.ndarray:
        return self.scorer.gradient(weights, ranking, rewards)

    def item_scores(self, weights: FeatureWeights, query: str, query_vec: np.ndarray,
                    texts: Sequence[str], vectors: Sequence[np.ndarray]) -> list[float]:
        return self.scorer.item_scores(weights, query, query_vec, texts, vectors)


class BilinearRanker:
    """`reranker.kind="rmm"`: the paper's maps, q' = q + W_q q, m' = m + W_m m, score q'.m'."""

    def __init__(self, reranker: Reranker) -> None:
        self.reranker, self.model = reranker, BilinearModel()

    def dim(self, query_vec: np.ndarray) -> int:
        return len(query_vec)

    def rank(self, weights: Weights, query: str, query_vec: np.ndarray,
             hits: Sequence[MemoryHit], vectors: Sequence[np.ndarray], keep: int,
             explore: bool) -> Ranking:
        return self.reranker.rank(weights, query_vec, vectors, [h.score for h in hits], keep,
                                  explore=explore)

    def gradient(self, weights: Weights, ranking: Ranking,
                 rewards: Sequence[float]) -> tuple[LowRank, LowRank]:
        return self.reranker.gradient(weights, ranking, rewards)

    def item_scores(self, weights: Weights, query: str, query_vec: np.ndarray,
                    texts: Sequence[str], vectors: Sequence[np.ndarray]) -> list[float]:
        """q'.m' alone (no retrieval part)."""
        rows, mask = pack_rows(list(vectors))
        scores = Reranker(combine="reranker").scores(
            weights, np.asarray(query_vec, np.float32), rows, mask, np.zeros(len(vectors)))
        return [float(s) for s in scores]


class HandSet:
    """`reranker.kind="none"`: the fused order as retrieved; no exploration, nothing learned."""

    model = None

    def dim(self, query_vec: np.ndarray | None) -> int:
        return 0

    def rank(self, weights: None, query: str, query_vec: np.ndarray,
             hits: Sequence[MemoryHit], vectors: Sequence[np.ndarray], keep: int,
             explore: bool) -> Ranking:
        fused = np.array([h.score for h in hits], np.float32)
        scores = zscore(fused)
        return Ranking(fused, select(scores, keep, 1.0, None, False),
                       min(keep, len(hits)), scores)

    def gradient(self, weights: None, ranking: Ranking, rewards: Sequence[float]) -> None:
        return None

    def item_scores(self, weights: None, query: str, query_vec: np.ndarray,
                    texts: Sequence[str], vectors: Sequence[np.ndarray]) -> list[float]:
        """The best-row cosine (the retriever's dense score)."""
        return [float((np.asarray(v) @ query_vec).max()) for v in vectors]


def start_weights(setting: str | None) -> FeatureWeights | None:
    """`reranker.weights` read: "shipped", None (zero) or a weights file's path."""
    if setting == "shipped":
        return shipped_weights()
    return None if setting is None else load_weights(setting)


def _features(config: MemoryConfig) -> Scorer:
    speakers = frozenset(s.casefold() for s in config.fusion.assistant_speakers)
    start = start_weights(config.reranker.weights)

    @lru_cache(maxsize=1024)
    def assistant_only(names: tuple[str, ...]) -> bool:
        return bool(names) and all(n.casefold() in speakers for n in names)

    return FeatureRanker(FeatureScorer(
        temperature=config.reranker.temperature, rng=np.random.default_rng(config.reranker.seed),
        assistant_only=lambda names: assistant_only(tuple(names))), start)


def _bilinear(config: MemoryConfig) -> Scorer:
    return BilinearRanker(Reranker(temperature=config.reranker.temperature,
                                   mix=config.reranker.mix, baseline=config.reranker.baseline,
                                   combine=config.reranker.combine,
                                   rng=np.random.default_rng(config.reranker.seed)))


RERANKERS: dict[str, Callable[[MemoryConfig], Scorer]] = {
    "features": _features,
    "rmm": _bilinear,
    "none": lambda config: HandSet(),
}
"""`MemoryConfig.reranker.kind` -> the scorer it builds."""

LEARNING_RATES = {"features": 1e-2, "rmm": 1e-3}
"""Each learning scorer's step size when `reranker.learning_rate` is None (measured, README;
the paper's 1e-3 moves 15 feature weights too little in a few hundred steps)."""


class LearnedReranker:
    """What `ReflectiveMemory` calls: rerank a search's candidates, learn from its citations.

    `cache` bounds the weights read per scope (a shared LRU, else one of
    `reranker.cache_bytes` of its own)."""

    def __init__(self, store: Store, config: MemoryConfig, cache: ByteLRU | None = None) -> None:
        if config.reranker.kind not in RERANKERS:
            raise InvalidInputError(f"unknown reranker {config.reranker.kind!r}; choose one of "
                                    f"{sorted(RERANKERS)}")
        self.store = store
        self.scope = config.reranker.scope
        self.scorer = RERANKERS[config.reranker.kind](config)
        rate = config.reranker.learning_rate or LEARNING_RATES.get(config.reranker.kind, 0.0)
        self.weights = WeightStore(store, learning_rate=rate,
                                   batch=config.reranker.batch,
                                   cache_bytes=config.reranker.cache_bytes,
                                   model=self.scorer.model, cache=cache) \
            if self.scorer.model is not None else None

    def state_name(self, user_id: str) -> str:
        """The store name of the weights that rank `user_id`'s searches."""
        return WeightStore.name(self.scope, user_id, self.scorer.model.kind)

    def _load(self, user_id: str, query_vec: np.ndarray | None) -> Any:
        if self.weights is None:
            return None
        return self.weights.load(self.state_name(user_id), self.scorer.dim(query_vec))

    def weights_for(self, user_id: str, dim: int) -> Any:
        """The newest weights that rank `user_id`'s searches (None with `reranker.kind="none"`);
        `dim` is the embedder's."""
        return self._load(user_id, np.zeros(dim, np.float32))

    def rerank(self, user_id: str, query_vec: np.ndarray, candidates: Sequence[MemoryHit],
               vectors: Sequence[np.ndarray], keep: int, *, explore: bool = False,
               query: str = "") -> tuple[list[MemoryHit], Ranking | None]:
        """The best `keep` candidates under the current weights, and what feedback needs.

        `vectors` are each candidate's vector rows (its own, then its turns'), as indexed.
        """
        if not candidates:
            return [], None
        ranking = self.scorer.rank(self._load(user_id, query_vec), query, query_vec,
                                   candidates, vectors, keep, explore)
        ranking.name = self.state_name(user_id) if self.weights is not None else ""
        ranking.user_id = user_id
        ranking.ids = [h.memory.id for h in candidates]
        hits = [MemoryHit(candidates[i].memory, float(ranking.scores[i]), candidates[i].text,
                          rank) for rank, i in enumerate(ranking.order[:ranking.kept])]
        return hits, ranking

    def feedback(self, result: SearchResult, cited: Sequence[Any]) -> None:
        """One REINFORCE step (queued when batching); a result takes feedback once.
        With `reranker.kind="none"` the citations are checked and nothing is recorded."""
        if not isinstance(result, SearchResult):
            raise InvalidInputError(f"feedback needs a SearchResult, not {type(result).__name__}")
        ranking = result.state.get("ranking")
        if not isinstance(ranking, Ranking):
            raise FeedbackError("this search result has no hits: there is nothing to learn from")
        rewards = rewards_for(ranking, cited_ids(cited), [h.memory.id for h in result.hits])
        if self.weights is None:
            return
        # the gradient before the claim: if it fails, the result can still take feedback
        weights = self.weights.current(ranking.name, self.scorer.dim(ranking.query))
        grads = self.scorer.gradient(weights, ranking, rewards)
        if not self.weights.add_for_result(ranking.name, grads, result.id, result.user_id):
            raise FeedbackError(f"search result {result.id} already had its feedback")

    def learned_scores(self, user_id: str, query_vec: np.ndarray,
                       vectors: Sequence[np.ndarray], *, query: str = "",
                       texts: Sequence[str] | None = None) -> list[float]:
        """The learned score of arbitrary items (their vector rows and texts) on their own,
        with no retrieval part: "rmm" q'.m'; "features" the cosine plus what the weights
        make of the item's text; "none" the cosine."""
        texts = list(texts) if texts is not None else [""] * len(vectors)
        return self.scorer.item_scores(self._load(user_id, query_vec), query,
                                       np.asarray(query_vec, np.float32), texts, vectors)

    def flush(self) -> None:
        if self.weights is not None:
            self.weights.flush()

    def forget(self, user_id: str) -> None:
        """Drop the user's queued feedback, so that no step is logged for them after a forget
        (`Store.forget` erases what was logged)."""
        if self.weights is not None:
            self.weights.discard(WeightStore.name("user", user_id, self.scorer.model.kind))


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
