"""Dates as the library writes them into an LLM's context."""

from __future__ import annotations

from datetime import datetime


def format_date(moment: datetime) -> str:
    """`8 May 2023`: short, unambiguous, and what temporal questions need."""
    return f"{moment.day} {moment:%B %Y}"
