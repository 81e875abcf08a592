"""The narrow views of a store that each stage needs. Every backend's `Store` implements
them all (it is their union; `base.Store` says what each method guarantees); a stage asks
only for the view it uses, so it can be handed a fake or a smaller store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from ..types import Memory, Turn
    from .base import AttrsUpdate, IndexData, MergeInto, NewMemory, SessionState


@runtime_checkable
class TurnLog(Protocol):
    """The durable raw log: turns and the sessions they belong to (the write path's start,
    MemGPT's recall storage)."""

    def append_turns(self, user_id: str, session_id: str, turns: Sequence[Turn],
                     started_at: datetime | None, now: float,
                     metadata: dict[str, Any] | None = None) -> list[Turn]: ...

    def turns(self, user_id: str, session_id: str | None = None, *,
              after_seq: int = 0) -> list[Turn]: ...

    def session(self, user_id: str, session_id: str) -> SessionState | None: ...

    def open_turns(self, user_id: str) -> list[tuple[Turn, dict[str, Any]]]: ...


@runtime_checkable
class ReflectionLog(Protocol):
    """Where prospective reflection commits: its memories with the session's progress mark,
    or a recorded failure."""

    def commit_reflection(self, user_id: str, session_id: str, expected_reflected: int,
                          reflected: int, adds: Sequence[NewMemory],
                          merges: Sequence[MergeInto]) -> list[Memory] | None: ...

    def record_reflection_failure(self, user_id: str, session_id: str, error: str, *,
                                  retry_at: float | None, counted: bool = True) -> None: ...


@runtime_checkable
class MemoryBank(Protocol):
    """The memories of a user with their vectors: what retrieval and A-MEM notes read."""

    def memories(self, user_id: str, ids: Sequence[str] | None = None, *,
                 with_versions: bool = True) -> list[Memory]: ...

    def memory_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    def index_data(self, user_id: str) -> IndexData: ...

    def update_memory_attrs(self, user_id: str, updates: Sequence[AttrsUpdate]
                            ) -> list[Memory]: ...


@runtime_checkable
class NamedState(Protocol):
    """Versioned named blobs written by compare-and-set (workflows, reranker snapshots)."""

    def load_state(self, name: str) -> tuple[int, bytes | None]: ...

    def save_state(self, name: str, expected_version: int, blob: bytes) -> bool: ...


@runtime_checkable
class UserState(Protocol):
    """A user's own named blobs, erased by `forget` (the MemGPT working context)."""

    def load_user_state(self, user_id: str, name: str) -> tuple[int, bytes | None]: ...

    def save_user_state(self, user_id: str, name: str, expected_version: int,
                        blob: bytes) -> bool: ...


@runtime_checkable
class UsageLog(Protocol):
    """LLM calls and tokens per user and session."""

    def add_usage(self, user_id: str, session_id: str, usage: dict[str, Any]) -> None: ...

    def usage(self, user_id: str | None = None) -> dict[str, int]: ...
