"""What makes a repeated write the same write: the same content, for the same user and
scope (metadata), said at the same time (or at none given) gets the same ids, so the store
keeps it once. A client retrying an `add` after a timeout, a script run twice or a file
added again changes nothing (mem0's and the LangGraph store's users expect as much)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from ..types import Turn, as_utc


def add_key(user_id: str, content: str | Sequence[Turn], metadata: Mapping[str, Any],
            said: datetime | None) -> str:
    """The identity of one write (hex): a fact's text or a conversation's turns (speaker,
    text, id, time), the user, the checked metadata (scopes included) and when it was said
    as given (None: not given; equal moments in other zones are one)."""
    words: Any = content if isinstance(content, str) else [
        [t.speaker, t.text, t.id, _moment(t.timestamp)] for t in content]
    blob = json.dumps([user_id, words, dict(metadata), _moment(said)], sort_keys=True,
                      ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def fact_ids(key: str, count: int) -> list[str]:
    """The memory ids of a fact's `count` passages: 32 hex digits, as random ids have."""
    return [hashlib.sha256(f"{key}:{n}".encode()).hexdigest()[:32] for n in range(count)]


def session_for(key: str, length: int = 32) -> str:
    """A session id for a conversation written without one (`length` hex digits)."""
    return key[:length]


def numbered(turns: Sequence[Turn], session_id: str) -> list[Turn]:
    """`turns` with each one given without an id numbered by its place in the session,
    `session_id:1`, `session_id:2`, ... (the ids the log gives a new session's turns), so
    that logging them again is refused as a repeat instead of appended."""
    return [t if t.id else replace(t, id=f"{session_id}:{n}") for n, t in enumerate(turns, 1)]


def _moment(value: datetime | None) -> str | None:
    return as_utc(value).astimezone(timezone.utc).isoformat() if value is not None else None
