"""A-MEM's read side: retrieval that follows the links notes keep between memories."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..models.cosines import IDENTITY, CosineScale
from ..storage.protocols import MemoryBank
from ..types import Memory, MemoryHit


def follow_links(store: MemoryBank, user_id: str, ranked: Sequence[MemoryHit],
                 query_vec: np.ndarray, *, k: int, per_hit: int,
                 text_of: Callable[[Memory], str],
                 scale: CosineScale = IDENTITY) -> list[MemoryHit]:
    """The top `k` of `ranked` with each hit followed by up to `per_hit` of its linked
    memories (those closest to the query first); links take the slots of lower hits.

    A linked hit's score is its best cosine with the query (on the MiniLM's scale: `scale`,
    the embedder's `cosine_scale`).
    """
    shown: set[str] = set()
    linked_ids = list(dict.fromkeys(
        i for h in ranked[:k] for i in h.memory.attrs.get("links", [])))
    fetched = {m.id: m for m in store.memories(user_id, linked_ids)} if linked_ids else {}
    vectors = store.memory_vectors(user_id, list(fetched))
    cosine = {mid: scale.of_query(float(np.max(v @ query_vec)))
              for mid, v in vectors.items()}
    out: list[MemoryHit] = []
    for hit in ranked:
        if len(out) >= k:
            break
        if hit.memory.id in shown:
            continue
        out.append(hit)
        shown.add(hit.memory.id)
        links = [i for i in hit.memory.attrs.get("links", []) if i in fetched and i not in shown]
        for mid in sorted(links, key=lambda i: -cosine.get(i, -1.0))[:per_hit]:
            if len(out) >= k:
                break
            out.append(MemoryHit(fetched[mid], cosine.get(mid, 0.0), text_of(fetched[mid]), 0))
            shown.add(mid)
    return [MemoryHit(h.memory, h.score, h.text, rank) for rank, h in enumerate(out)]
