"""`RMMChatMemory`: reflective memory as a LlamaIndex `BaseMemory` for chat engines and agents."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from llama_index.core.async_utils import asyncio_run
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr
from llama_index.core.llms.llm import LLM
from llama_index.core.memory import Memory as ChatWindow
from llama_index.core.memory.types import BaseMemory

from rmm_core import Memory, MemoryHit, ReflectiveMemory
from rmm_core.adapter_guard import aguarded, check_arguments, check_speakers
from rmm_core.errors import InvalidInputError
from rmm_core.types import check_id

from .converters import (
    ROLE_SPEAKERS,
    ROLES,
    hits_to_message,
    latest_user_text,
    message_text,
    messages_to_turns,
    new_tail,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _new_session_id() -> str:
    return uuid.uuid4().hex


class RMMChatMemory(BaseMemory):
    """Recent chat history plus the long-term memories recalled for the current message.

    The chat window is LlamaIndex's SQL-backed `Memory` (`window`): kept in a database file
    (see `from_defaults`), it is there again after a restart, for the same `session_id`.
    Every user/assistant message with text that is put (or set) here is appended at once,
    with its time, to the durable turn log of `session_id`; system messages, tool outputs
    and tool-call-only messages stay in the window only. `get(input)` returns one system
    message with the memories recalled for `input` (default: the latest user message; the
    chat's own turns are not recalled, the window holds them), then the window. `reset()`
    (what a chat engine's `reset()` calls) and `end_session()` end the session: it is
    reflected into memories and a new one starts.

    Errors (`rmm_core.adapter_guard`): bad input raises `InvalidInputError`; any other
    failing memory call (search, log, reflection) is logged and the chat goes on without
    memory, unless `strict=True`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any = Field(exclude=True, description="The rmm_core.ReflectiveMemory to use.")
    user_id: str = Field(description="Whose memories are read and written.")
    k: int | None = Field(default=None, gt=0, description="Most memories recalled per message "
                                                          "(None: as many as fit the budget).")
    memory_token_ratio: float = Field(
        default=0.3, gt=0.0, lt=1.0,
        description="Share of the window's token_limit kept for the recalled memories.")
    strict: bool = Field(default=False, description="Raise memory failures instead of "
                                                    "logging them.")
    speakers: dict[MessageRole, str] = Field(
        default_factory=lambda: dict(ROLE_SPEAKERS),
        description="Message role -> the speaker its turns are logged as (roles left out "
                    "are not logged).")
    window: ChatWindow = Field(
        description="The short-term window (LlamaIndex's SQL-backed Memory).")
    _pending: bool = PrivateAttr(default=False)

    def __init__(self, **data: Any) -> None:
        check_arguments(data, roles=ROLES, counts=(), optional=("k", "max_words"))
        super().__init__(**data)

    @classmethod
    def class_name(cls) -> str:
        return "RMMChatMemory"

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls, memory: ReflectiveMemory | str, user_id: str, session_id: str | None = None,
        token_limit: int | None = None, k: int | None = None,
        chat_history: list[ChatMessage] | None = None, llm: LLM | None = None,
        tokenizer_fn: Any = None, async_database_uri: str | None = None,
        table_name: str = "llama_index_memory", memory_token_ratio: float = 0.3,
        strict: bool = False, speakers: Mapping[str, str] = ROLE_SPEAKERS, **kwargs: Any,
    ) -> RMMChatMemory:
        """Memory for one user's chat `session_id`; `memory` may be a path or URL to open.
        The window lives in `async_database_uri` (for example
        `"sqlite+aiosqlite:///chat.sqlite"`), by default in the memory's own SQLite file when
        `memory` is a file path, else in process memory (gone after a restart).
        `token_limit` defaults to 75% of the `llm`'s context window (or 3000 tokens), of
        which `memory_token_ratio` is for recalled memories: the best that fit, in rank
        order (at most `k` when given);
        `speakers` names the turns each message role is logged as (e.g.
        `{"user": "Ann", "assistant": "Sage"}`)."""
        if kwargs:
            raise InvalidInputError(f"unexpected argument(s) {sorted(kwargs)}")
        check_id(user_id, "user_id")  # before a path is opened
        check_speakers(speakers, ROLES)
        if isinstance(memory, str):
            if async_database_uri is None and memory != ":memory:" and "://" not in memory:
                async_database_uri = f"sqlite+aiosqlite:///{Path(memory).resolve()}"
            memory = ReflectiveMemory.open(memory)
        check_id(session_id, "session_id", optional=True)
        if token_limit is None:
            token_limit = int(llm.metadata.context_window * 0.75) if llm else 3000
        if not isinstance(token_limit, int) or token_limit < 1:
            raise InvalidInputError(f"token_limit must be a positive integer, got {token_limit!r}")
        window = ChatWindow.from_defaults(
            session_id=session_id or _new_session_id(), token_limit=token_limit,
            tokenizer_fn=tokenizer_fn, chat_history_token_ratio=1.0 - memory_token_ratio,
            async_database_uri=async_database_uri, table_name=table_name)
        out = cls(memory=memory, user_id=user_id, k=k, memory_token_ratio=memory_token_ratio,
                  strict=strict, speakers=dict(speakers), window=window)
        if chat_history:
            out.set(chat_history)
        return out

    @property
    def session_id(self) -> str:
        """The session the turns are logged to (also the window's key in its database)."""
        return self.window.session_id

    @property
    def tokenizer_fn(self) -> Any:
        """The window's tokenizer (chat engines use it to count their prefix messages)."""
        return self.window.tokenizer_fn

    @property
    def token_limit(self) -> int:
        return self.window.token_limit

    # read ---------------------------------------------------------------------------------
    async def aget(self, input: str | ChatMessage | None = None, initial_token_count: int = 0,
                   **kwargs: Any) -> list[ChatMessage]:
        """The recalled-memory system message (if any) and the recent history that fits."""
        if isinstance(input, ChatMessage):
            input = message_text(input)
        history = await self.window.aget()
        query = input if input is not None else latest_user_text(history)
        recalled, used = None, 0
        if query:
            # the chat's own turns still waiting for reflection are in the window already
            # a word is at least one token: the budget in words draws every hit that can fit
            result = await self._guarded("recall failed", lambda: self.memory.asearch(
                query, user_id=self.user_id, k=self.k, max_words=self._budget(),
                session_id=self.session_id))
            recalled, used = self._fit(list(result or []))
        history = self._tail(history, self.token_limit - initial_token_count - used)
        return [recalled, *history] if recalled is not None else history

    async def aget_all(self) -> list[ChatMessage]:
        return await self.window.aget_all()

    def _count(self, message: ChatMessage) -> int:
        return len(self.tokenizer_fn(message_text(message)))

    def _budget(self) -> int:
        """Tokens of the window kept for recalled memories."""
        return max(1, int(self.token_limit * self.memory_token_ratio))

    def _fit(self, hits: list[MemoryHit]) -> tuple[ChatMessage | None, int]:
        """The recalled message with the best hits that fit the memory budget, and its size."""
        budget = self._budget()
        while hits:
            message = hits_to_message(hits)
            if message is not None and self._count(message) <= budget:
                return message, self._count(message)
            hits = hits[:-1]
        return None, 0

    def _tail(self, history: list[ChatMessage], budget: int) -> list[ChatMessage]:
        """The newest messages within `budget` tokens, starting at a user message (the
        newest message is kept even when it alone is over the budget)."""
        start, used = len(history), 0
        while start > 0 and used + self._count(history[start - 1]) <= budget:
            start -= 1
            used += self._count(history[start])
        while start < len(history) - 1 and history[start].role != MessageRole.USER:
            start += 1
        return history[min(start, len(history) - 1):] if history else []

    # write --------------------------------------------------------------------------------
    async def aput(self, message: ChatMessage) -> None:
        await self.aput_messages([message])

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Log the messages' turns durably, then add the messages to the window."""
        await self._log(messages)
        await self.window.aput_messages(messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Replace the window; only messages it did not already start with are logged."""
        await self._log(new_tail(await self.window.aget_all(), messages))
        await self.window.aset(messages)

    async def areset(self) -> None:
        """Start a new conversation: the current session ends (reflected by the memory's
        background worker when it has one, else at once)."""
        await self.aend_session(wait=not self.memory.config.sessions.background_reflection)

    async def aend_session(self, wait: bool = True) -> list[Memory]:
        """Reflect this session into memories (`wait=False`: leave that to the background
        worker, return []), clear the window, continue in a new session."""
        memories = await self._guarded("reflection failed", lambda: self._reflect(wait))
        await self.window.areset()
        self.window.session_id = _new_session_id()
        self._pending = False
        return memories or []

    async def _reflect(self, wait: bool) -> list[Memory]:
        try:
            return await self.memory.aend_session(user_id=self.user_id,
                                                  session_id=self.session_id, wait=wait)
        except InvalidInputError:
            if self._pending:  # the only expected failure is "no such session": nothing logged
                raise
            return []

    async def _log(self, messages: list[ChatMessage]) -> None:
        turns = messages_to_turns(messages, self.speakers)
        if turns and await self._guarded("could not log the turns", lambda: self.memory.aappend(
                turns, user_id=self.user_id, session_id=self.session_id)):
            self._pending = True

    async def _guarded(self, what: str, call: Callable[[], Awaitable[T]]) -> T | None:
        return await aguarded(call, strict=self.strict, what=what, logger=logger)

    # sync API: the async methods run to completion -----------------------------------------
    def get(self, input: str | ChatMessage | None = None, initial_token_count: int = 0,
            **kwargs: Any) -> list[ChatMessage]:
        return asyncio_run(self.aget(input, initial_token_count, **kwargs))

    def get_all(self) -> list[ChatMessage]:
        return asyncio_run(self.aget_all())

    def put(self, message: ChatMessage) -> None:
        asyncio_run(self.aput(message))

    def put_messages(self, messages: list[ChatMessage]) -> None:
        asyncio_run(self.aput_messages(messages))

    def set(self, messages: list[ChatMessage]) -> None:
        asyncio_run(self.aset(messages))

    def reset(self) -> None:
        asyncio_run(self.areset())

    def end_session(self, wait: bool = True) -> list[Memory]:
        return asyncio_run(self.aend_session(wait))
