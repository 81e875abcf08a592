"""Fixtures of the LangChain adapter tests: a scripted chat model that records its prompts."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field


class RecordingChatModel(FakeMessagesListChatModel):
    """Answers with its scripted `responses` in turn and records every prompt it receives."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any):
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingChatModel:
        return self

    def system_prompt(self, call: int = -1) -> str:
        """Text of the system message of one recorded call ('' when it had none)."""
        first = self.seen[call][0]
        return first.text if first.type == "system" else ""


@pytest.fixture
def chat_model():
    """Factory: a recording fake chat model answering with the given texts or messages."""

    def _make(*answers: str | AIMessage) -> RecordingChatModel:
        responses = [a if isinstance(a, AIMessage) else AIMessage(content=a) for a in answers]
        return RecordingChatModel(responses=responses or [AIMessage(content="OK.")])

    return _make


@pytest.fixture
def mem(open_memory):
    """A fresh memory in a temporary SQLite file with the real embedder."""
    return open_memory()
