"""The write path built from the settings: the ingestor that logs turns and ends sessions,
over a reflector with A-MEM notes and supersession when they are on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..config import MemoryConfig, unit_words
from ..models.embed import Embedder
from ..storage.base import Store
from .ingest import Ingestor
from .judge import judge_for
from .reflect import Pipeline, Placed, Reflector
from .supersede import Similar, Supersession


def ingestor_for(store: Store, config: MemoryConfig, embedder: Embedder, pipeline: Pipeline,
                 llm: Any, *, index_for: Callable[[str], Placed],
                 similar: Similar) -> Ingestor:
    """The ingestor `ReflectiveMemory` writes through; `index_for` gives a user's current
    search index (to place new memories), `similar` an existing memory's nearest ones."""
    reflector = Reflector(store, embedder, pipeline, index_for,
                          turn_vectors=config.embedding.turn_vectors,
                          memory_vector=config.embedding.memory_vector,
                          retry_delay=config.sessions.reflection_retry_delay,
                          unit_words=unit_words(config))
    if config.notes.enabled:  # A-MEM notes and links after each reflection commit
        from ..agents.notes import keeper_for

        reflector.after_commit = keeper_for(store, embedder, config, llm)
    reflector.supersede = Supersession(
        store, similar, assistants=config.fusion.assistant_speakers,
        judge=judge_for(config, llm)) if config.supersession else None
    return Ingestor(store, config, reflector)
