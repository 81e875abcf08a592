"""Any LlamaIndex `BaseEmbedding` as the core's embedder (what the core's `as_embedder`
calls)."""

from __future__ import annotations

from typing import Any

from llama_index.core.embeddings import BaseEmbedding

from rmm_core.errors import InvalidInputError
from rmm_core.models.embed import Embedder
from rmm_core.models.embed_adapters import BatchEmbedder, embedder_name


def wrap_embedding(obj: Any) -> Embedder:
    """Wrap a LlamaIndex `BaseEmbedding` (`get_text_embedding_batch` for every batch, in
    chunks of its `embed_batch_size`); anything else is an `InvalidInputError`."""
    if not isinstance(obj, BaseEmbedding):
        raise InvalidInputError(
            f"expected a LlamaIndex BaseEmbedding as embedder, got {type(obj).__name__}")
    stated = getattr(obj, "embed_dim", None) or getattr(obj, "dimensions", None)
    return BatchEmbedder(obj.get_text_embedding_batch, name=embedder_name(obj, "model_name"),
                         dim=stated, source=obj)
