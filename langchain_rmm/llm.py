"""Any LangChain chat model as the core's `complete(prompt) -> str` (what `as_llm` calls)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import Runnable

from rmm_core.errors import InvalidInputError
from rmm_core.models.llm import LLM


class ChatModelLLM:
    """Completes the core's prompts with a LangChain chat model (or any runnable that takes
    messages), sync or async; reports token usage when the model does."""

    def __init__(self, model: Runnable) -> None:
        self.model = model

    def complete(self, prompt: str) -> str:
        return self.complete_with_usage(prompt)[0]

    def complete_with_usage(self, prompt: str) -> tuple[str, dict[str, int]]:
        return _text_and_usage(self.model.invoke([HumanMessage(content=prompt)]))

    async def acomplete(self, prompt: str) -> str:
        return _text_and_usage(await self.model.ainvoke([HumanMessage(content=prompt)]))[0]


def wrap_llm(obj: Any) -> LLM:
    """Wrap a LangChain chat model for the core; anything else is an `InvalidInputError`."""
    if isinstance(obj, ChatModelLLM):
        return obj
    if not isinstance(obj, Runnable):
        raise InvalidInputError(
            f"expected a LangChain chat model (a Runnable), got {type(obj).__name__}")
    return ChatModelLLM(obj)


def _text_and_usage(output: Any) -> tuple[str, dict[str, int]]:
    """The answer's text (a message's or a plain string) and its token counts if reported."""
    if isinstance(output, str):
        return output, {}
    if not isinstance(output, BaseMessage):
        raise InvalidInputError(
            f"the model returned {type(output).__name__}, not a message or a string")
    usage = getattr(output, "usage_metadata", None) or {}
    return output.text, {"prompt_tokens": int(usage.get("input_tokens") or 0),
                         "completion_tokens": int(usage.get("output_tokens") or 0)}
