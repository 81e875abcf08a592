"""`RMMRetriever`: a user's reflective memories as a LangChain `BaseRetriever`."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from rmm_core.adapter_guard import check_arguments

from .converters import hits_to_documents


class RMMRetriever(BaseRetriever):
    """Retrieves, fuses and reranks one user's memories; one `Document` per memory.

    `page_content` is exactly the text the library would put in an LLM's context;
    `metadata` holds `memory_id`, `score`, `rank`, `refs` (source turn ids), `session_ids`
    and ISO timestamps. `invoke(query, k=..., user_id=...)` overrides the defaults per call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any = Field(exclude=True, description="The rmm_core.ReflectiveMemory to search.")
    user_id: str = Field(description="Whose memories are searched.")
    k: int = Field(default=5, description="Memories returned per query.")
    max_words: int | None = Field(
        default=None, description="Return only the best memories whose texts fit in this "
                                  "many words, strictly (None: no word budget).")

    def __init__(self, **data: Any) -> None:
        check_arguments(data)
        super().__init__(**data)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, user_id: str | None = None
                                ) -> list[Document]:
        hits = self.memory.search(query, user_id=user_id or self.user_id,
                                  k=self.k if k is None else k, max_words=self.max_words)
        return hits_to_documents(hits)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None, user_id: str | None = None,
    ) -> list[Document]:
        hits = await self.memory.asearch(query, user_id=user_id or self.user_id,
                                         k=self.k if k is None else k,
                                         max_words=self.max_words)
        return hits_to_documents(hits)

