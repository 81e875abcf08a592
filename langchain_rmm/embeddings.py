"""Any LangChain `Embeddings` as the core's embedder (what the core's `as_embedder` calls)."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

from rmm_core.errors import InvalidInputError
from rmm_core.models.embed import Embedder
from rmm_core.models.embed_adapters import BatchEmbedder, embedder_name


def wrap_embeddings(obj: Any) -> Embedder:
    """Wrap a LangChain `Embeddings` (`embed_documents` for every batch); anything else is an
    `InvalidInputError`."""
    if not isinstance(obj, Embeddings):
        raise InvalidInputError(
            f"expected a LangChain Embeddings as embedder, got {type(obj).__name__}")
    return BatchEmbedder(obj.embed_documents,
                         name=embedder_name(obj, "model", "model_name", "model_id"),
                         dim=getattr(obj, "dimensions", None), source=obj)
