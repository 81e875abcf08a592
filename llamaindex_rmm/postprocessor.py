"""`RMMReranker`: the learned RMM reranker as a LlamaIndex node postprocessor."""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from rmm_core.adapter_guard import check_arguments
from rmm_core.errors import InvalidInputError

from .converters import node_memory_id


class RMMReranker(BaseNodePostprocessor):
    """Reorders any retriever's nodes with the reranker learned from `feedback`, keeps `top_n`.

    Nodes made from this library's hits (`hits_to_nodes`) are scored with their stored
    vectors; any other node's text is embedded. The node's score becomes the reranker's
    learned score q'.m' (unbounded, higher first, as a cross-encoder's logits are): it orders
    the nodes and is not the [0, 1] relevance that `ReflectiveMemory.search` hits carry.
    """

    memory: Any = Field(exclude=True, description="The rmm_core.ReflectiveMemory to use.")
    user_id: str = Field(description="Whose reranker weights apply (per-user scope).")
    top_n: int = Field(default=5, gt=0, description="Nodes kept after reranking.")

    def __init__(self, **data: Any) -> None:
        check_arguments(data, counts=("top_n",))
        super().__init__(**data)

    @classmethod
    def class_name(cls) -> str:
        return "RMMReranker"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if query_bundle is None:
            raise InvalidInputError("RMMReranker needs a query (query_str or query_bundle)")
        if not nodes:
            return []
        scores = self.memory.rerank_texts(
            query_bundle.query_str,
            [n.node.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes],
            user_id=self.user_id,
            memory_ids=[node_memory_id(n) for n in nodes],
        )
        ranked = sorted(zip(scores, nodes), key=lambda pair: -pair[0])[: self.top_n]
        return [NodeWithScore(node=n.node, score=float(s)) for s, n in ranked]
