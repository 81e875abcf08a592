"""The text of a hit: exactly what the library puts into an LLM's context for a memory."""

from __future__ import annotations

from ..language.dates import format_date
from ..types import Memory


def hit_text(memory: Memory, *, dates: bool = True) -> str:
    """The memory's text, prefixed by the date it happened when known."""
    return date_head(memory) + memory.text if dates else memory.text


def date_head(memory: Memory) -> str:
    """What `hit_text` puts before the memory's text: `[8 May 2023] `, or '' undated."""
    when = memory.occurred_at
    return f"[{format_date(when)}] " if when is not None else ""


MEMORY_HEADER = (
    "Long-term memory about this user, recalled for the current message "
    "(most relevant first; use what helps, it may be out of date):"
)

CITE_INSTRUCTION = (
    "When your answer relies on one of these memories, put its number in square brackets "
    "right after the statement, such as [2] or [1][3]; if none helped, end with [NO_CITE]."
)


def numbered_block(texts: list[str], *, cite: bool = False) -> str:
    """Recalled memories as the numbered block a system prompt carries ('' for none);
    the numbers are what an answer cites."""
    if not texts:
        return ""
    lines = [MEMORY_HEADER, *(f"[{n}] {t}" for n, t in enumerate(texts, 1))]
    return "\n".join([*lines, CITE_INSTRUCTION] if cite else lines)
