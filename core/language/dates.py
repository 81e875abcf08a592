"""Dates as the library writes them into an LLM's context."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache


@lru_cache(maxsize=4096)
def format_date(moment: datetime) -> str:
    """`8 May 2023`: short, unambiguous, and what temporal questions need (cached: a
    search dates every candidate, and a conversation has few dates)."""
    return f"{moment.day} {moment:%B %Y}"
