"""The storage contract every backend keeps (SQLite embedded, PostgreSQL for servers)."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..types import FactChange, Memory, Turn

SCHEMA_VERSION = 7

_LEGACY_USER_STATE = {"reranker/user/": "reranker", "workflows/user/": "workflows"}
"""Schema 2 names of per-user state (prefix + user id) → their name under the hashed id."""


def user_state_name(user_id: str, name: str) -> str:
    """The named-state key of a user's own blob: a hash of the user id, so that an erased
    blob's row does not keep the id of a forgotten user."""
    return user_state_prefix(user_id) + name


def user_state_prefix(user_id: str) -> str:
    """What every named-state key of the user's own blobs starts with (`forget` finds them
    all by it, whatever their kind: reranker, workflows, working context, ...)."""
    return f"user:{hashlib.sha256(user_id.encode()).hexdigest()}:"


def legacy_state_renames(names: Iterable[str]) -> list[tuple[str, str]]:
    """Schema 3: per-user state named `reranker/user/<id>` or `workflows/user/<id>` moves
    to its name under the hashed id; (old, new) for each such name."""
    return [(n, user_state_name(n[len(prefix):], kind))
            for n in names for prefix, kind in _LEGACY_USER_STATE.items()
            if n.startswith(prefix)]


@dataclass(frozen=True, slots=True)
class EmbedderRecord:
    """The embedder a store was built with: its name, and its vector of a fixed probe text,
    which tells the same model under another name (a framework's wrapper) from another."""

    name: str
    probe: np.ndarray | None = None


@dataclass(slots=True)
class SessionState:
    """Where a session stands: turns appended, how many of them reflected, ended or not."""

    user_id: str
    session_id: str
    status: str  # "open" | "ended" | "done"
    started_at: datetime | None
    last_activity: float
    n_turns: int
    reflected: int
    failures: int = 0
    """Reflection attempts that failed since the session's last successful one."""
    last_error: str | None = None
    retry_at: float | None = None
    """When the background sweep may try a failed reflection again (epoch seconds)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """The caller's metadata (scopes included), given to every memory reflected from it."""


@dataclass(slots=True)
class NewMemory:
    """A memory to add: record plus its retrieval vectors."""

    memory: Memory
    vectors: np.ndarray


@dataclass(slots=True)
class MergeInto:
    """Fold new material into stored memory `target_id`; the old text stays as a version."""

    target_id: str
    text: str
    key: str
    refs: list[str]
    vectors: np.ndarray
    source: str
    speakers: list[str] = field(default_factory=list)
    session_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class AttrsUpdate:
    """New attrs for a stored memory (A-MEM notes and links); optionally a new retrieval key
    and key vector (row 0 of its vectors). With `reason`, a version row records the change."""

    memory_id: str
    attrs: dict[str, Any]
    reason: str | None = None
    source: str | None = None
    key: str | None = None
    key_vector: np.ndarray | None = None


@dataclass(slots=True)
class IndexData:
    """What a user's search index is built from: one row per vector, `owner` maps to ids."""

    generation: int
    ids: list[str]
    keys: list[str]
    vectors: np.ndarray
    owner: np.ndarray
    sessions: list[str] = field(default_factory=list)
    """The (first) session of each memory, in `ids` order: neighbours share one."""
    metadata: list[dict[str, Any]] = field(default_factory=list)
    """Each memory's metadata, in `ids` order (what search filters match)."""
    speakers: list[list[str]] = field(default_factory=list)
    """Who wrote each memory's turns, in `ids` order."""
    seqs: list[int] = field(default_factory=list)
    """Each memory's place in the user's bank (ascending, like `ids`): new ones come last."""


@dataclass(slots=True)
class IndexDelta:
    """What changed in a user's memories since a cached index's generation: the changed
    memories as they are now (`data`, whose generation is the current one) and the ids of
    those deleted."""

    data: IndexData
    removed: list[str]


@dataclass(frozen=True, slots=True)
class SignalRow:
    """A memory's search signals as a database computed them (`DatabaseSearch`)."""

    id: str
    speakers: str
    """Who wrote it (the stored JSON list)."""
    lexical: float
    unit: float
    turn: float | None = None
    prev: str | None = None
    """Its previous memory in the user's order, when of the same session."""
    next: str | None = None


@runtime_checkable
class DatabaseSearch(Protocol):
    """A store that searches inside its database (`rmm_core.read.dbsearch` fuses what it gives)."""

    def prepare_search(self, dim: int, *, wait: bool = True) -> bool: ...

    def search_size(self, user_id: str) -> int: ...

    def search_terms(self, user_id: str, terms: Sequence[str], size: int,
                     avg_length: float) -> Any:
        """The query's words prepared for the lexical signal (passed to the calls below)."""

    def search_shortlist(self, user_id: str, words: Any, query: np.ndarray,
                         filters: Mapping[str, Sequence[Any]], *, dense: int, lexical: int,
                         expected: int) -> list[SignalRow]: ...

    def search_sample(self, user_id: str, size: int) -> Any:
        """Memories spread over the bank: `.signals(words, query)` gives theirs (rows),
        `.avg_length` their mean length."""

    def search_pool(self, user_id: str, ids: Sequence[str], words: Any,
                    query: np.ndarray, filters: Mapping[str, Sequence[Any]]
                    ) -> tuple[dict[str, tuple[str | None, str | None]], list[SignalRow]]: ...


class Store(ABC):
    """Durable turns, sessions, memories with versions, vectors and learned weights.

    Every method is scoped by `user_id` where data belongs to a user. Writes that belong
    together are atomic: a reflection's adds and merges land with the session's progress
    mark in one transaction, which is what makes reflection exactly-once.
    """

    url: str
    read_only: bool = False
    """True when the store was opened for reading only (a file or folder not writable)."""

    # turn log -----------------------------------------------------------------------
    @abstractmethod
    def append_turns(self, user_id: str, session_id: str, turns: Sequence[Turn],
                     started_at: datetime | None, now: float,
                     metadata: dict[str, Any] | None = None) -> list[Turn]:
        """Durably add turns (ids filled in) and open or reopen the session; a new session
        takes `metadata`, an existing one must already have the same (`InvalidInputError`)."""

    @abstractmethod
    def turns(self, user_id: str, session_id: str | None = None, *,
              after_seq: int = 0) -> list[Turn]:
        """The raw log in order, optionally one session's turns after position `after_seq`."""

    # sessions -----------------------------------------------------------------------
    @abstractmethod
    def session(self, user_id: str, session_id: str) -> SessionState | None: ...

    @abstractmethod
    def mark_ended(self, user_id: str, session_id: str) -> bool:
        """Flag a session for reflection; False when there is no such session."""

    @abstractmethod
    def pending_sessions(self, idle_before: float | None, user_id: str | None = None, *,
                         max_failures: int | None = None) -> list[SessionState]:
        """Sessions with unreflected turns that ended, or are open and idle since before;
        with `max_failures`, only those with fewer failed attempts whose `retry_at` has
        come."""

    def record_reflection_failure(self, user_id: str, session_id: str, error: str, *,
                                  retry_at: float | None, counted: bool = True) -> None:
        """Note on the session that its reflection (or a step after it) failed with `error`;
        `counted` adds one to its failed attempts. A successful commit clears both."""
        raise NotImplementedError(f"{type(self).__name__} does not record reflection failures")

    def reflection_counts(self, user_id: str | None = None) -> dict[str, int]:
        """Sessions with unreflected turns: `waiting` (no failed attempt) and `failed`."""
        raise NotImplementedError(f"{type(self).__name__} does not count pending sessions")

    # memories -----------------------------------------------------------------------
    @abstractmethod
    def commit_reflection(self, user_id: str, session_id: str, expected_reflected: int,
                          reflected: int, adds: Sequence[NewMemory],
                          merges: Sequence[MergeInto]) -> list[Memory] | None:
        """Apply adds and merges and advance the session mark, in one transaction.

        Returns None (and writes nothing) when the mark is no longer `expected_reflected`:
        another process reflected those turns first.
        """

    @abstractmethod
    def memories(self, user_id: str, ids: Sequence[str] | None = None, *,
                 with_versions: bool = True) -> list[Memory]:
        """A user's memories (all, or those ids, in that order); never another user's."""

    @abstractmethod
    def memory_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors per memory id."""

    @abstractmethod
    def index_data(self, user_id: str) -> IndexData: ...

    @abstractmethod
    def generation(self, user_id: str) -> int:
        """A counter that changes whenever the user's memories change (cache key)."""

    def index_changes(self, user_id: str, since: int) -> IndexDelta | None:
        """What changed in the user's memories since generation `since`, so that a cached
        index takes only that; None when the store cannot tell (build from `index_data`)."""
        return None

    @abstractmethod
    def forget(self, user_id: str) -> None:
        """Delete every turn, session, memory, version and vector of the user and erase every
        per-user named state (`user_state_prefix`), in one transaction."""

    @abstractmethod
    def users(self) -> list[str]: ...

    def has_user(self, user_id: str) -> bool:
        """Whether the store holds anything of the user, per-user named state included."""
        return user_id in self.users()

    def vector_dim(self) -> int | None:
        """The dimension of the stored memory vectors; None while there are none."""
        return None

    def embedder(self) -> EmbedderRecord | None:
        """The embedder whose vectors the store holds, as recorded; None: not recorded."""
        return None

    def record_embedder(self, record: EmbedderRecord) -> EmbedderRecord | None:
        """Record `record` unless an embedder is recorded already; return the one recorded
        (None where the store keeps no such record)."""
        return None

    def expect_embedder(self, record: EmbedderRecord,
                        check: Callable[[EmbedderRecord], None]) -> None:
        """Record `record` with the first memory vectors this store writes (not at an open
        that writes none), and before each write until then `check` (which raises) any
        embedder another process recorded first. Here: recorded at once."""
        recorded = self.record_embedder(record)
        if recorded is not None:
            check(recorded)

    def sessions(self, user_id: str) -> list[SessionState]:
        """Every session of the user, oldest first (operators' inspection and export)."""
        raise NotImplementedError(f"{type(self).__name__} does not list sessions")

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        """How many users, sessions, turns and memories the store (or one user) holds."""
        raise NotImplementedError(f"{type(self).__name__} does not count its records")

    def restore(self, user_id: str, sessions: Sequence[SessionState], turns: Sequence[Turn],
                memories: Sequence[NewMemory]) -> None:
        """Write a user's exported sessions, turns and memories (with their versions and
        vectors) as they were, in one transaction; the user must have no data yet."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore exported users")

    def open_turns(self, user_id: str) -> list[tuple[Turn, dict[str, Any]]]:
        """The user's turns not yet reflected (in log order), each with its session's
        metadata: what search returns as provisional hits."""
        raise NotImplementedError(f"{type(self).__name__} does not list unreflected turns")

    def add_memories(self, user_id: str, adds: Sequence[NewMemory], source: str) -> list[Memory]:
        """Add memories made without reflection (`ReflectiveMemory.add` of a fact), each with
        a first version from `source`, in one transaction; return those added. One whose id
        the user has already is left as it is, not added again (a repeated `add`)."""
        raise NotImplementedError(f"{type(self).__name__} cannot add memories directly")

    def update_memory(self, user_id: str, memory_id: str, text: str, key: str,
                      vectors: np.ndarray, metadata: dict[str, Any]) -> Memory:
        """Replace a memory's text, key, vectors and metadata; the change is a new version
        (reason `update`). `NotFoundError` when the user has no such memory."""
        raise NotImplementedError(f"{type(self).__name__} cannot update memories")

    def delete_memory(self, user_id: str, memory_id: str) -> None:
        """Delete a memory with its versions and vectors. `NotFoundError` when the user has
        no such memory."""
        raise NotImplementedError(f"{type(self).__name__} cannot delete memories")

    def record_changes(self, user_id: str, changes: Sequence[FactChange]) -> list[Memory]:
        """Record supersessions and conflicts between the user's memories in one transaction
        (a superseded memory gets `valid_to`, `superseded_by` and a "superseded" version;
        nothing is deleted); return the memories changed. `NotFoundError` (and nothing
        written) when an id is not this user's memory."""
        raise NotImplementedError(f"{type(self).__name__} does not record supersession")

    def update_memory_attrs(self, user_id: str, updates: Sequence[AttrsUpdate]) -> list[Memory]:
        """Apply attrs updates to the user's memories in one transaction; return them.

        Raises `InvalidInputError` (and writes nothing) when an id is not this user's memory.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not implement update_memory_attrs, which A-MEM notes "
            "(config notes.enabled=True) need")

    # learned weights and feedback ------------------------------------------------------
    @abstractmethod
    def load_state(self, name: str) -> tuple[int, bytes | None]:
        """A named blob (reranker weights) with its version; (0, None) when absent."""

    @abstractmethod
    def save_state(self, name: str, expected_version: int, blob: bytes) -> bool:
        """Compare-and-set: store `blob` only if the version is still `expected_version`."""

    @abstractmethod
    def append_state_delta(self, name: str, blob: bytes) -> int:
        """Log a small update to a named blob (a reranker step); returns its sequence number.

        Appends never conflict, so concurrent writers lose nothing and write little."""

    @abstractmethod
    def state_log(self, name: str) -> tuple[int, list[int]]:
        """The named blob's version and the sequence numbers of its logged deltas, read in
        one snapshot."""

    @abstractmethod
    def state_deltas(self, name: str, seqs: Sequence[int]) -> dict[int, bytes]:
        """The logged deltas asked for that still exist (folded ones are gone)."""

    @abstractmethod
    def compact_state(self, name: str, expected_version: int, blob: bytes,
                      folded: Sequence[int]) -> bool:
        """Compare-and-set `blob` (which includes the `folded` deltas) and drop those deltas,
        in one transaction."""

    # a user's own named blobs (MemGPT working context); stored as named state by default,
    # under a hash of the user id, so every backend has them without new tables
    def load_user_state(self, user_id: str, name: str) -> tuple[int, bytes | None]:
        """A user's named blob with its version; (version, None) when absent or cleared."""
        version, blob = self.load_state(user_state_name(user_id, name))
        return version, blob or None

    def save_user_state(self, user_id: str, name: str, expected_version: int,
                        blob: bytes) -> bool:
        """Compare-and-set of a user's named blob, as `save_state`."""
        return self.save_state(user_state_name(user_id, name), expected_version, blob)

    @abstractmethod
    def claim_feedback(self, result_id: str, user_id: str,
                       state_delta: tuple[str, bytes] | None = None) -> bool:
        """Record that a search result got its feedback and, in the same transaction, append
        `state_delta` (name, blob) as `append_state_delta` would; False, and nothing
        appended, if the result already had its feedback."""

    # usage accounting ---------------------------------------------------------------------
    @abstractmethod
    def add_usage(self, user_id: str, session_id: str, usage: dict[str, Any]) -> None:
        """Add LLM calls/tokens spent on a session."""

    @abstractmethod
    def usage(self, user_id: str | None = None) -> dict[str, int]: ...

    @abstractmethod
    def close(self) -> None: ...
