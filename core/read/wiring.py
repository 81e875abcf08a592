"""The read path built from the settings: the searcher over one byte budget shared by users'
search indexes and reranker weights, with the fusion weights and the learned reranker."""

from __future__ import annotations

from typing import Any

from ..config import MemoryConfig, cache_budget
from ..learn.rerank import LearnedReranker
from ..lru import ByteLRU
from ..models.embed import Embedder
from ..storage.base import Store
from .cache import IndexCache
from .index import FusionWeights, english_stemmer
from .search import Searcher


def fusion_weights(config: MemoryConfig) -> FusionWeights:
    """`config.fusion` as the index reads it (assistant speakers case-folded)."""
    fusion = config.fusion
    return FusionWeights(fusion.lexical_weight, fusion.dense_weight, fusion.turn_weight,
                         fusion.neighbour_smoothing, fusion.assistant_weight,
                         frozenset(s.casefold() for s in fusion.assistant_speakers))


def searcher_for(store: Store, embedder: Embedder, config: MemoryConfig) -> Searcher:
    """The searcher `ReflectiveMemory` reads through: its `indexes` and `reranker` share one
    cache of `storage.cache_bytes`."""
    cache: ByteLRU[Any] = ByteLRU(cache_budget(config))
    indexes = IndexCache(store, cache, english_stemmer())
    return Searcher(store, embedder, config, indexes,
                    LearnedReranker(store, config, cache=cache), fusion_weights(config))
