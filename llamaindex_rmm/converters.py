"""Pure converters between LlamaIndex types (messages, nodes) and rmm_core records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.schema import NodeWithScore, TextNode

from rmm_core import MemoryHit, Turn
from rmm_core.read.context import numbered_block

# Only the conversation is logged: system prompts are instructions, and tool calls and tool
# outputs are agent plumbing (an assistant message that only calls tools has no text).
ROLE_SPEAKERS: Mapping[str, str] = {
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
}
"""Message role -> turn speaker; pass your own mapping (`speakers=`) to name the assistant."""

ROLES = frozenset(role.value for role in MessageRole)
"""The message roles a `speakers` mapping may name."""


MEMORY_ID_KEY = "rmm_memory_id"
"""Node metadata key that marks a node as one of this library's memories."""


def message_text(message: ChatMessage) -> str:
    """The text blocks of a message joined by newlines ('' when it has none)."""
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock))


def message_to_turn(message: ChatMessage, speakers: Mapping[str, str] = ROLE_SPEAKERS,
                    at: datetime | None = None) -> Turn | None:
    """A user or assistant message with text as a `Turn`; None for anything else."""
    speaker = speakers.get(message.role)
    text = message_text(message)
    if speaker is None or not text.strip():
        return None
    return Turn(speaker=speaker, text=text, timestamp=at)


def messages_to_turns(messages: Sequence[ChatMessage],
                      speakers: Mapping[str, str] = ROLE_SPEAKERS) -> list[Turn]:
    """The loggable turns of `messages`, stamped with the current time."""
    now = datetime.now(timezone.utc)
    turns = (message_to_turn(m, speakers, now) for m in messages)
    return [t for t in turns if t is not None]


def new_tail(old: Sequence[ChatMessage], new: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The messages of `new` past the prefix it shares with `old` (what `set` adds)."""
    shared = 0
    for before, after in zip(old, new):
        if before.role != after.role or message_text(before) != message_text(after):
            break
        shared += 1
    return list(new[shared:])


def latest_user_text(messages: Sequence[ChatMessage]) -> str:
    """Text of the most recent user message that has text ('' when there is none)."""
    for message in reversed(messages):
        if message.role == MessageRole.USER and message_text(message).strip():
            return message_text(message)
    return ""


def hits_to_text(hits: Sequence[MemoryHit]) -> str:
    """Recalled memories as a numbered block (numbers are what an answer cites); '' if none."""
    return numbered_block([hit.text for hit in hits])


def hits_to_nodes(hits: Sequence[MemoryHit]) -> list[NodeWithScore]:
    """Memory hits as LlamaIndex nodes (id = memory id) for retrievers and postprocessors;
    the hit's provenance and validity (`MemoryHit.metadata`) ride along, kept out of the text
    an LLM or an embedder reads."""
    return [_node(hit) for hit in hits]


def _node(hit: MemoryHit) -> NodeWithScore:
    meta = hit.metadata()
    hidden = [key for key in meta if key != "refs"]
    return NodeWithScore(node=TextNode(id_=hit.memory.id, text=hit.text,
                                       metadata={**meta, MEMORY_ID_KEY: hit.memory.id},
                                       excluded_llm_metadata_keys=hidden,
                                       excluded_embed_metadata_keys=hidden),
                         score=hit.score)


def node_memory_id(node: NodeWithScore) -> str | None:
    """The memory id of a node made by `hits_to_nodes`, else None."""
    value = node.node.metadata.get(MEMORY_ID_KEY)
    return value if isinstance(value, str) else None


def hits_to_message(hits: Sequence[MemoryHit]) -> ChatMessage | None:
    """Recalled memories as one system message; None when nothing was recalled."""
    text = hits_to_text(hits)
    return ChatMessage(role=MessageRole.SYSTEM, content=text) if text else None
