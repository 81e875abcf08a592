"""Memories written directly, without reflection: a fact as the caller states it, or a new
text for an existing memory."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from ..language.timeref import ground
from ..language.units import passages
from ..models.embed import Embedder
from ..storage.base import NewMemory, Store
from ..types import Memory, Turn, new_memory_id, utcnow
from .compress import Compressor
from .repeats import fact_ids


def fact_memories(text: str, *, user_id: str, metadata: dict[str, Any], words: int,
                  compressor: Compressor, embedder: Embedder,
                  occurred_at: datetime | None = None, key: str | None = None
                  ) -> list[NewMemory]:
    """A fact as new memories, one per passage of whole sentences of at most `words`: keyed,
    embedded, with no refs and `source="direct"`; relative times dated as of when it was
    said (`occurred_at`, default now). `key` (`write.repeats.add_key`): ids made from it,
    the same for the same add; None: random ids."""
    now = utcnow()
    said = occurred_at or now
    fact = Turn.coerce({"speaker": "user", "text": text})
    fact = replace(fact, text=ground(fact.text, said))  # dated first: passages count its words
    texts = [p.text for p in passages(fact, words)]
    keys = compressor.compress(texts)
    vectors = embedder.embed(texts)
    ids = fact_ids(key, len(texts)) if key else [new_memory_id() for _ in texts]
    return [NewMemory(Memory(id=mid, user_id=user_id, text=text, key=found or text,
                             refs=[], speakers=["user"], occurred_at=said, created_at=now,
                             updated_at=now, attrs={"source": "direct"}, metadata=metadata),
                      vector[None, :])
            for mid, text, found, vector in zip(ids, texts, keys, vectors)]


def rewritten(memory: Memory, text: str, metadata: dict[str, Any], *, store: Store,
              compressor: Compressor, embedder: Embedder) -> Memory:
    """`memory` saying `text` from now on: a new version, re-keyed and re-embedded."""
    text = Turn.coerce({"speaker": "user", "text": text}).text
    key = compressor.compress([text])[0] or text
    vector = embedder.embed([text])[0]
    return store.update_memory(memory.user_id, memory.id, text, key, vector[None, :], metadata)
