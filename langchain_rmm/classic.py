"""`RMMMemory`: reflective memory as a `langchain_classic` `BaseMemory` for legacy chains."""

from __future__ import annotations

import uuid
from typing import Any

from langchain_classic.base_memory import BaseMemory
from langchain_classic.memory.utils import get_prompt_input_key
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    get_buffer_string,
)
from pydantic import ConfigDict, Field

from rmm_core import Memory, Turn
from rmm_core.adapter_guard import check_arguments
from rmm_core.errors import InvalidInputError
from rmm_core.read.ranked import CONTEXT_WORDS

from .converters import ROLE_SPEAKERS, format_memories, messages_to_turns


def _new_session_id() -> str:
    return uuid.uuid4().hex


class RMMMemory(BaseMemory):
    """Recalled long-term memories plus the session's recent turns, for `ConversationChain`
    and other chains that take a `memory=`.

    `load_memory_variables` fills `memory_key` (default `history`) with the memories
    recalled for the chain's input and the last `history_turns` turns of this session, read
    back from the durable log (text, or messages with `return_messages=True`).
    `save_context` appends the exchange to the log at once, under the names `speakers` gives
    the human and the AI (`user` and `assistant` by default). `clear()` reflects the session
    into memories and continues in a new one; sessions also end by the core's idle timeout.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any = Field(exclude=True, description="The rmm_core.ReflectiveMemory to use.")
    user_id: str = Field(description="Whose memories are read and written.")
    session_id: str = Field(default_factory=_new_session_id,
                            description="Session the exchanges are logged to.")
    max_words: int | None = Field(
        default=CONTEXT_WORDS, description="Words of memories recalled per input, strictly "
                                           "(None: `k` memories whatever their size).")
    k: int | None = Field(default=None, description="Most memories recalled per input.")
    history_turns: int = Field(default=10, description="Recent turns of this session shown.")
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    return_messages: bool = False
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    speakers: dict[str, str] = Field(
        default_factory=lambda: dict(ROLE_SPEAKERS),
        description="Message type ('human', 'ai') -> the speaker its turns are logged as.")

    def __init__(self, **data: Any) -> None:
        check_arguments(data, counts=(), optional=("k", "max_words"))
        if not isinstance(data.get("history_turns", 0), int) or data.get("history_turns", 0) < 0:
            raise InvalidInputError(
                f"history_turns must be a non-negative integer, got {data['history_turns']!r}")
        super().__init__(**data)

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key]

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Memories recalled for the input, then the session's recent turns."""
        query = inputs.get(self.input_key or get_prompt_input_key(inputs, self.memory_variables))
        hits = self.memory.search(str(query or ""), user_id=self.user_id, k=self.k,
                                  max_words=self.max_words)
        user = self.speakers.get("human")
        recent = [HumanMessage(content=t.text) if t.speaker == user else AIMessage(content=t.text)
                  for t in self._recent_turns()]
        block = format_memories(hits.hits)
        if self.return_messages:
            return {self.memory_key: [SystemMessage(content=block), *recent] if block else recent}
        history = get_buffer_string(recent, human_prefix=self.human_prefix,
                                    ai_prefix=self.ai_prefix)
        return {self.memory_key: "\n\n".join(part for part in (block, history) if part)}

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Append the exchange (input, then output) to this session's durable log."""
        key = self.input_key or get_prompt_input_key(inputs, self.memory_variables)
        turns = messages_to_turns([HumanMessage(content=str(inputs[key])),
                                   AIMessage(content=str(outputs[self._output_key(outputs)]))],
                                  self.speakers)
        if turns:
            self.memory.append(turns, user_id=self.user_id, session_id=self.session_id)

    def clear(self) -> None:
        """Start a new conversation: the current session is reflected first."""
        self.end_session()

    def end_session(self) -> list[Memory]:
        """Reflect this session into memories and continue in a new session."""
        try:
            memories = self.memory.end_session(user_id=self.user_id, session_id=self.session_id)
        except InvalidInputError:  # nothing was logged to this session yet
            memories = []
        self.session_id = _new_session_id()
        return memories

    def _recent_turns(self) -> list[Turn]:
        if not self.history_turns:
            return []
        turns = self.memory.turns(user_id=self.user_id, session_id=self.session_id)
        return turns[-self.history_turns:]

    def _output_key(self, outputs: dict[str, Any]) -> str:
        if self.output_key is not None:
            return self.output_key
        if len(outputs) == 1:
            return next(iter(outputs))
        if "output" in outputs:
            return "output"
        raise InvalidInputError(
            f"got output keys {sorted(outputs)}; set output_key to the one to remember")

