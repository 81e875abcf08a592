"""Pure converters between LangChain types (messages, documents) and rmm_core records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, SystemMessage

from rmm_core import MemoryHit, Turn
from rmm_core.read.context import numbered_block

# Only the conversation is logged: system prompts are instructions, tool calls and tool
# outputs are agent plumbing (an AI message that only calls tools has no text).
ROLE_SPEAKERS: Mapping[str, str] = {"human": "user", "ai": "assistant"}
"""Message type -> turn speaker; pass your own mapping to name the assistant."""


def message_to_turn(message: BaseMessage, speakers: Mapping[str, str] = ROLE_SPEAKERS,
                    at: datetime | None = None) -> Turn | None:
    """A user or assistant message with text as a `Turn`; None for anything else."""
    speaker = speakers.get(message.type)
    text = message.text
    if speaker is None or not text.strip():
        return None
    return Turn(speaker=speaker, text=text, timestamp=at)


def messages_to_turns(messages: Sequence[BaseMessage],
                      speakers: Mapping[str, str] = ROLE_SPEAKERS) -> list[Turn]:
    """The loggable turns of `messages`, stamped with the current time."""
    now = datetime.now(timezone.utc)
    turns = (message_to_turn(m, speakers, now) for m in messages)
    return [t for t in turns if t is not None]


def latest_user_text(messages: Sequence[BaseMessage]) -> str:
    """Text of the most recent human message that has text ('' when there is none)."""
    for message in reversed(messages):
        if message.type == "human" and message.text.strip():
            return message.text
    return ""


def hit_metadata(hit: MemoryHit) -> dict[str, Any]:
    """JSON-safe provenance and validity of a hit (`MemoryHit.metadata`)."""
    return hit.metadata()


def hits_to_documents(hits: Sequence[MemoryHit]) -> list[Document]:
    """Memory hits as `Document`s: `page_content` is `hit.text`, `id` the memory id."""
    return [Document(page_content=hit.text, id=hit.memory.id, metadata=hit_metadata(hit))
            for hit in hits]


def format_memories(items: Sequence[MemoryHit | Document], *, cite: bool = False) -> str:
    """Hits or retrieved documents as a numbered block (numbers are what an answer cites);
    '' when there are none. Fits LCEL: `retriever | format_memories`."""
    texts = [i.page_content if isinstance(i, Document) else i.text for i in items]
    return numbered_block(texts, cite=cite)


def with_memories(system: SystemMessage | None, block: str) -> SystemMessage | None:
    """The system message with the recalled-memory block appended (created if absent)."""
    if not block:
        return system
    if system is None:
        return SystemMessage(content=block)
    if isinstance(system.content, str):
        content: Any = f"{system.content}\n\n{block}" if system.content else block
    else:
        content = [*system.content, {"type": "text", "text": f"\n\n{block}"}]
    return system.model_copy(update={"content": content})
