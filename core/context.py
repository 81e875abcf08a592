"""The text of a hit: exactly what the library puts into an LLM's context for a memory."""

from __future__ import annotations

from datetime import datetime

from .types import Memory


def format_date(moment: datetime) -> str:
    """`8 May 2023`: short, unambiguous, and what temporal questions need."""
    return f"{moment.day} {moment:%B %Y}"


def hit_text(memory: Memory, *, dates: bool = True) -> str:
    """The memory's text, prefixed by the date it happened when known."""
    if dates and memory.occurred_at is not None:
        return f"[{format_date(memory.occurred_at)}] {memory.text}"
    return memory.text
