"""`RMMMemory`: reflective memory as a LlamaIndex `BaseMemory` for chat engines and agents."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr
from llama_index.core.llms.llm import LLM
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.memory.types import BaseMemory

from rmm_core import Memory, MemoryHit, ReflectiveMemory
from rmm_core.errors import InvalidInputError
from rmm_core.types import check_id

from .converters import (
    check_target,
    hits_to_message,
    latest_user_text,
    message_text,
    messages_to_turns,
    new_tail,
)


def _new_session_id() -> str:
    return uuid.uuid4().hex


class RMMMemory(BaseMemory):
    """Recent chat history plus the long-term memories recalled for the current message.

    Every user/assistant message with text that is put (or set) here is appended at once to
    the durable turn log of `session_id`; system messages, tool outputs and tool-call-only
    assistant messages stay in the short-term window but are not logged. `get(input)` returns
    one system message with the memories recalled for `input` (default: the latest user
    message), then the most recent history within `token_limit`. `end_session()` (and
    `reset()`) reflects the session into memories and starts a new one; sessions also end
    by the core's idle timeout. The async methods run the sync ones in a thread.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any = Field(exclude=True, description="The rmm_core.ReflectiveMemory to use.")
    user_id: str = Field(description="Whose memories are read and written.")
    session_id: str = Field(default_factory=_new_session_id,
                            description="Session the turns are logged to.")
    k: int = Field(default=5, gt=0, description="Memories recalled per message.")
    memory_token_ratio: float = Field(
        default=0.3, gt=0.0, le=1.0,
        description="Largest share of token_limit the recalled memories may take.")
    buffer: ChatMemoryBuffer = Field(description="The short-term, token-limited window.")
    _pending: bool = PrivateAttr(default=False)

    def __init__(self, **data: Any) -> None:
        check_target(data.get("memory"), data.get("user_id"))
        check_id(data.get("session_id"), "session_id", optional=True)
        super().__init__(**data)

    @classmethod
    def class_name(cls) -> str:
        return "RMMMemory"

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls, memory: ReflectiveMemory, user_id: str, session_id: str | None = None,
        token_limit: int | None = None, k: int = 5,
        chat_history: list[ChatMessage] | None = None, llm: LLM | None = None,
        tokenizer_fn: Any = None, **kwargs: Any,
    ) -> RMMMemory:
        """Memory for one user's conversation; `token_limit` defaults as `ChatMemoryBuffer`'s."""
        if kwargs:
            raise InvalidInputError(f"unexpected argument(s) {sorted(kwargs)}")
        if token_limit is not None and (not isinstance(token_limit, int) or token_limit < 1):
            raise InvalidInputError(f"token_limit must be a positive integer, got {token_limit!r}")
        buffer = ChatMemoryBuffer.from_defaults(llm=llm, token_limit=token_limit,
                                                tokenizer_fn=tokenizer_fn)
        out = cls(memory=memory, user_id=user_id, session_id=session_id or _new_session_id(),
                  k=k, buffer=buffer)
        if chat_history:
            out.set(chat_history)
        return out

    @property
    def tokenizer_fn(self) -> Any:
        """The window's tokenizer (chat engines use it to count their prefix messages)."""
        return self.buffer.tokenizer_fn

    @property
    def token_limit(self) -> int:
        return self.buffer.token_limit

    # read ---------------------------------------------------------------------------------
    def get(self, input: str | ChatMessage | None = None, initial_token_count: int = 0,
            **kwargs: Any) -> list[ChatMessage]:
        """The recalled-memory system message (if any) and the recent history that fits."""
        if isinstance(input, ChatMessage):
            input = message_text(input)
        query = input if input is not None else latest_user_text(self.buffer.get_all())
        hits = list(self.memory.search(query, user_id=self.user_id, k=self.k,
                                       session_id=self.session_id))
        recalled, used = self._fit(hits)
        history = self.buffer.get(initial_token_count=initial_token_count + used)
        return [recalled, *history] if recalled is not None else history

    def get_all(self) -> list[ChatMessage]:
        return self.buffer.get_all()

    def _fit(self, hits: list[MemoryHit]) -> tuple[ChatMessage | None, int]:
        """The recalled message with the best hits that fit the memory budget, and its size."""
        budget = int(self.token_limit * self.memory_token_ratio)
        while hits:
            message = hits_to_message(hits)
            used = len(self.tokenizer_fn(message.content))
            if used <= budget:
                return message, used
            hits = hits[:-1]
        return None, 0

    # write --------------------------------------------------------------------------------
    def put(self, message: ChatMessage) -> None:
        self.put_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Log the messages' turns durably, then add the messages to the window."""
        self._log(messages)
        for message in messages:
            self.buffer.put(message)

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the window; only messages it did not already start with are logged."""
        self._log(new_tail(self.buffer.get_all(), messages))
        self.buffer.set(messages)

    def reset(self) -> None:
        """Start a new conversation: the current session is reflected first."""
        self.end_session()

    def end_session(self) -> list[Memory]:
        """Reflect this session into memories, clear the window, continue in a new session."""
        memories: list[Memory] = []
        try:
            memories = self.memory.end_session(user_id=self.user_id, session_id=self.session_id)
        except InvalidInputError:
            if self._pending:  # the only expected failure is "no such session": nothing logged
                raise
        self.buffer.reset()
        self.session_id = _new_session_id()
        self._pending = False
        return memories

    async def aend_session(self) -> list[Memory]:
        return await asyncio.to_thread(self.end_session)

    def _log(self, messages: list[ChatMessage]) -> None:
        turns = messages_to_turns(messages)
        if turns:
            self.memory.append(turns, user_id=self.user_id, session_id=self.session_id)
            self._pending = True
