"""The one LLM interface the core knows: `complete(prompt) -> str` (async when offered)."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from .errors import InvalidInputError


@runtime_checkable
class LLM(Protocol):
    """Anything that completes a prompt with text."""

    def complete(self, prompt: str) -> str: ...


class CallableLLM:
    """Wraps a plain `str -> str` callable."""

    def __init__(self, fn: Callable[[str], str]) -> None:
        self.fn = fn

    def complete(self, prompt: str) -> str:
        return str(self.fn(prompt))

    async def acomplete(self, prompt: str) -> str:
        return await asyncio.to_thread(self.complete, prompt)


# Framework objects are recognised by the top-level package of their class; the adapter
# module named here (shipped with this distribution) wraps them. The core imports neither.
_FRAMEWORK_ADAPTERS = {
    "langchain_core": "langchain_rmm.llm",
    "langchain": "langchain_rmm.llm",
    "langchain_community": "langchain_rmm.llm",
    "llama_index": "llamaindex_rmm.llm",
}


def as_llm(obj: Any) -> LLM:
    """Coerce a LangChain chat model, a LlamaIndex LLM, an object with `complete`, or a
    callable into an `LLM`."""
    for cls in type(obj).__mro__:
        root = cls.__module__.split(".")[0]
        if root in _FRAMEWORK_ADAPTERS:
            return importlib.import_module(_FRAMEWORK_ADAPTERS[root]).wrap_llm(obj)
    if isinstance(obj, LLM):
        return obj
    if callable(obj):
        return CallableLLM(obj)
    raise InvalidInputError(
        f"llm must be a LangChain chat model, a LlamaIndex LLM, an object with "
        f"complete(prompt) -> str, or a callable; got {type(obj).__name__}")
