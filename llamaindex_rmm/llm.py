"""Any LlamaIndex LLM as the core's `complete(prompt) -> str` (what the core's `as_llm` calls)."""

from __future__ import annotations

from typing import Any

from llama_index.core.llms import LLM as LlamaLLM

from rmm_core.errors import InvalidInputError
from rmm_core.models.llm import LLM


class LlamaIndexLLM:
    """Completes the core's prompts with a LlamaIndex LLM, sync or async."""

    def __init__(self, llm: LlamaLLM) -> None:
        self.llm = llm

    def complete(self, prompt: str) -> str:
        return self.llm.complete(prompt).text

    async def acomplete(self, prompt: str) -> str:
        return (await self.llm.acomplete(prompt)).text


def wrap_llm(obj: Any) -> LLM:
    """Wrap a LlamaIndex LLM for the core; anything else is an `InvalidInputError`."""
    if isinstance(obj, LlamaIndexLLM):
        return obj
    if not isinstance(obj, LlamaLLM):
        raise InvalidInputError(f"expected a LlamaIndex LLM, got {type(obj).__name__}")
    return LlamaIndexLLM(obj)
