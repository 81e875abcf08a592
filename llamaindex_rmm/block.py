"""`RMMMemoryBlock`: reflective memory as a block of LlamaIndex's `Memory`."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock

from rmm_core import Memory
from rmm_core.adapter_guard import aguarded, check_arguments
from rmm_core.read.ranked import CONTEXT_WORDS

from .converters import ROLE_SPEAKERS, ROLES, hits_to_text, latest_user_text, messages_to_turns

logger = logging.getLogger(__name__)


class RMMMemoryBlock(BaseMemoryBlock[str]):
    """Recalls the user's long-term memories for the latest user message, as block text.

    It records only what `Memory`'s short-term FIFO queue flushes into it (messages leave
    the queue when it passes its token limit). Messages still in the queue are NOT recorded
    in the turn log, so a short conversation may leave nothing behind: use `RMMChatMemory` for
    full capture. Flushed turns go to `session_id`, by default the owning `Memory`'s
    session; `end_session()` reflects it (the core's idle timeout does so too).
    """

    name: str = Field(default="reflective_memory", description="The block's name (its tag).")
    memory: Any = Field(exclude=True, description="The rmm_core.ReflectiveMemory to use.")
    user_id: str = Field(description="Whose memories are read and written.")
    max_words: int | None = Field(
        default=CONTEXT_WORDS, gt=0, description="Words of memories recalled per message, "
                                                 "strictly (None: `k` memories).")
    k: int | None = Field(default=None, gt=0, description="Most memories recalled per message.")
    session_id: str | None = Field(
        default=None, description="Session flushed turns go to; None = the Memory's session.")
    strict: bool = Field(default=False, description="Raise memory failures instead of "
                                                    "logging them (`rmm_core.adapter_guard`).")
    speakers: dict[MessageRole, str] = Field(
        default_factory=lambda: dict(ROLE_SPEAKERS),
        description="Message role -> the speaker its turns are logged as (roles left out "
                    "are not logged).")
    _last_session: str | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        check_arguments(data, roles=ROLES, counts=(), optional=("k", "max_words"))
        super().__init__(**data)

    async def _aget(self, messages: list[ChatMessage] | None = None,
                    **block_kwargs: Any) -> str:
        result = await aguarded(lambda: self.memory.asearch(
            latest_user_text(messages or []), user_id=self.user_id, k=self.k,
            max_words=self.max_words),
            strict=self.strict, what="recall failed", logger=logger)
        return hits_to_text(list(result or []))

    async def _aput(self, messages: list[ChatMessage]) -> None:
        turns = messages_to_turns(messages, self.speakers)
        if not turns:
            return
        # BaseMemoryBlock.aput tags each flushed message with the owning Memory's session.
        tagged = next((m.additional_kwargs.get("session_id") for m in messages
                       if m.additional_kwargs.get("session_id")), None)
        session = self.session_id or tagged or self._last_session or uuid.uuid4().hex
        if await aguarded(lambda: self.memory.aappend(turns, user_id=self.user_id,
                                                     session_id=session),
                         strict=self.strict, what="could not log the turns", logger=logger):
            self._last_session = session

    def end_session(self, session_id: str | None = None) -> list[Memory]:
        """Reflect the session (default: the last one recorded) into memories now."""
        session = session_id or self._last_session
        if session is None:
            return []
        return self.memory.end_session(user_id=self.user_id, session_id=session)
