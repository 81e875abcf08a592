"""The benchmark's records, whatever the dataset: conversations of dated sessions of `Turn`s
(id = the dataset's turn id) and questions with gold evidence turn ids."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from ..errors import InvalidInputError
from ..types import Turn

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Session:
    session_id: str
    started_at: datetime | None
    turns: list[Turn]


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    answer: str
    evidence: frozenset[str]
    category: int | str
    sides: tuple[tuple[str, frozenset[str]], ...] = ()
    """Named parts of the evidence where the dataset tells them apart (BEAM: `original_info`
    and `updated_info`, `first_statement` and `second_statement`)."""

    def side(self, name: str) -> frozenset[str]:
        """The evidence turns of one named part (empty when the question has no such part)."""
        return next((ids for key, ids in self.sides if key == name), frozenset())


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, ...]
    sessions: list[Session]
    questions: list[Question]
    observations: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    """LoCoMo only: session -> (speaker, fact, turn id)."""
    skipped: int = 0
    """Questions of the dataset left out: no gold evidence turn (abstention, adversarial)."""


def ingest(mem, conv: Conversation) -> float:
    """Feed a conversation through the public API as one user (`user_id = sample_id`),
    session by session; returns the seconds it took."""
    from ..ops.progress import progress

    start = time.perf_counter()
    for session in progress(conv.sessions, desc=f"{conv.sample_id} sessions", unit="session"):
        mem.add_session(session.turns, user_id=conv.sample_id, session_id=session.session_id,
                        started_at=session.started_at)
    return time.perf_counter() - start


def pick(items: Sequence[T], select: list[int] | None, what: str) -> list[T]:
    """`items` at the positions `select` (all when None); a position out of range is an error."""
    if select is None:
        return list(items)
    bad = [i for i in select if not 0 <= i < len(items)]
    if bad:
        raise InvalidInputError(f"no {what} at position(s) {bad}: there are {len(items)} "
                                f"(0-{len(items) - 1})")
    return [items[i] for i in select]
