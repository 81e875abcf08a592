"""The unit of prospective reflection: one session's new turns and their vectors."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..types import Turn


@dataclass(slots=True)
class SessionInput:
    """Turns of one session handed to the write-path stages, with one vector per turn."""

    user_id: str
    session_id: str
    turns: list[Turn]
    started_at: datetime | None = None
    vectors: np.ndarray | None = None


@dataclass(slots=True)
class Draft:
    """A memory proposed by extraction, before reconciliation with the bank."""

    text: str
    refs: list[str]
    speakers: list[str]
    key: str = ""
    occurred_at: datetime | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    positions: list[int] = field(default_factory=list)
    """Positions in `SessionInput.turns` of the text it holds (empty: every turn it refers to)."""
