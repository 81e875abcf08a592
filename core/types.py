"""The records that flow through the pipeline: turns in, memories and hits out."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from .errors import InvalidInputError

MAX_TEXT_CHARS = 4_000_000
"""Largest accepted turn text (characters); a 1 MB turn is fine, a runaway blob is not."""

_TURN_FIELDS = frozenset({"speaker", "text", "id", "timestamp", "session_id"})
_MESSAGE_FIELDS = frozenset({"role", "content", "id", "timestamp", "name"})
"""An OpenAI-style chat message: `{"role": "user", "content": "..."}` (`name` is ignored)."""

ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
         "system": "system", "tool": "tool", "function": "tool"}
"""Chat roles (OpenAI's and LangChain's message types) → the speaker a turn is logged as."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def new_memory_id() -> str:
    """A fresh memory id (random, so ids never collide across processes or stores)."""
    return uuid.uuid4().hex


def iso(value: datetime | None) -> str | None:
    """A datetime as stored and exported (ISO 8601); None stays None."""
    return value.isoformat() if value is not None else None


def from_iso(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(moment: datetime) -> datetime:
    """`moment` comparable with zoned times: a naive one is taken as UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def as_datetime(value: Any, what: str) -> datetime | None:
    """Accept a datetime, an ISO string or epoch seconds between the years `EARLIEST` and
    `LATEST` (as written and in UTC); reject anything else."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return _within_years(value, what)
    if isinstance(value, bool):
        raise InvalidInputError(f"{what} must be a datetime, ISO string or epoch seconds")
    if isinstance(value, (int, float)):
        try:  # NaN raises ValueError, inf and out-of-range values OverflowError or OSError
            return _within_years(datetime.fromtimestamp(value, timezone.utc), what)
        except (ValueError, OverflowError, OSError) as exc:
            raise InvalidInputError(f"{what} {value!r} is not a representable epoch time") from exc
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError as exc:
            raise InvalidInputError(f"{what} {value!r} is not an ISO 8601 date") from exc
        return _within_years(moment, what)
    raise InvalidInputError(
        f"{what} must be a datetime, ISO string or epoch seconds, not {type(value).__name__}"
    )


EARLIEST, LATEST = 100, 9899
"""The years a time given to the memory may lie in. Relative times in the text are dated
from it ("yesterday", "99 years ago": counts reach two digits) and times are compared in
UTC, so a time within a century of Python's years 1 and 9999 (0001-01-01 at +14:00 is
year 0 in UTC) would overflow there: it is refused at the door instead."""


def _within_years(moment: datetime, what: str) -> datetime:
    offset = moment.utcoffset() or timedelta(0)
    wall = moment.replace(tzinfo=None)
    if not EARLIEST <= wall.year <= LATEST or not EARLIEST <= (wall - offset).year <= LATEST:
        raise InvalidInputError(f"{what} {moment.isoformat()!r} is outside the years "
                                f"{EARLIEST}-{LATEST} this memory dates")
    return moment


def check_unicode(value: str, what: str) -> str:
    """Reject a lone surrogate: it is not Unicode text, and no store or encoder takes it."""
    found = _SURROGATE.search(value)
    if found:
        raise InvalidInputError(
            f"{what} holds a lone surrogate {found[0]!r} at character {found.start()}")
    return value


def check_query(value: Any, limit: int) -> str:
    """A query: a string of valid Unicode, cut to its first `limit` characters (an embedder
    reads only the first few hundred word pieces; a runaway query must not cost more)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"query must be a string, not {type(value).__name__}")
    return check_unicode(value[:limit], "query")


def check_count(value: Any, what: str) -> int:
    """A count such as `k` or a budget: a positive integer (a bool is not one)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInputError(f"{what} must be a positive integer, got {value!r}")
    return value


def check_id(value: Any, what: str, *, optional: bool = False) -> str | None:
    """Validate a user, session or turn id: a non-empty string without NUL."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, not {type(value).__name__}")
    if not value.strip() or "\x00" in value or len(value) > 512:
        raise InvalidInputError(f"{what} must be 1-512 characters without NUL, got {value!r:.60}")
    return check_unicode(value, what)


@dataclass(frozen=True, slots=True)
class Turn:
    """One utterance. `id` is the caller's id (kept as given); `session_id` is set on read."""

    speaker: str
    text: str
    id: str | None = None
    timestamp: datetime | None = None
    session_id: str | None = None

    @classmethod
    def coerce(cls, value: Any) -> Turn:
        """A `Turn` from any common message form; raise `InvalidInputError` if bad.

        Accepted: a `Turn`; a dict `{"speaker", "text"}` (plus `id`, `timestamp`); an
        OpenAI-style dict `{"role", "content"}` (content a string or a list of text parts);
        a `(role, text)` tuple. Roles map to speakers by `ROLES` (`human` → `user`, `ai` →
        `assistant`).
        """
        data = _turn_fields(value)
        speaker, text = data.get("speaker"), data.get("text")
        if not isinstance(speaker, str) or not speaker.strip() or "\x00" in speaker:
            raise InvalidInputError(f"turn speaker must be a non-empty string, got {speaker!r:.60}")
        if not isinstance(text, str):
            raise InvalidInputError(f"turn text must be a string, not {type(text).__name__}")
        if not text.strip():
            raise InvalidInputError("turn text is empty or only whitespace")
        if len(text) > MAX_TEXT_CHARS:
            raise InvalidInputError(f"turn text has {len(text)} characters; limit {MAX_TEXT_CHARS}")
        return cls(
            speaker=check_unicode(speaker.strip(), "turn speaker"),
            text=check_unicode(text, "turn text"),
            id=check_id(data.get("id"), "turn id", optional=True),
            timestamp=as_datetime(data.get("timestamp"), "turn timestamp"),
            session_id=check_id(data.get("session_id"), "session_id", optional=True),
        )

    def render(self) -> str:
        """The turn as a line of context: `speaker: text`."""
        return f"{self.speaker}: {self.text}"


def _turn_fields(value: Any) -> dict[str, Any]:
    """The `Turn` fields of one message in any accepted form (not yet validated)."""
    if isinstance(value, Turn):
        return {f: getattr(value, f) for f in _TURN_FIELDS}
    if isinstance(value, tuple):
        if len(value) != 2:
            raise InvalidInputError(f"a message tuple is (role, text), got {len(value)} items")
        return {"speaker": _speaker_of(value[0]), "text": value[1]}
    if not isinstance(value, Mapping):
        raise InvalidInputError("a turn must be a Turn, a dict or a (role, text) tuple, not "
                                f"{type(value).__name__}")
    if "role" in value or "content" in value:
        unknown = set(value) - _MESSAGE_FIELDS
        if unknown:
            raise InvalidInputError(f"unknown message field(s) {sorted(unknown)}")
        if "role" not in value or "content" not in value:
            raise InvalidInputError("a chat message needs both 'role' and 'content'")
        return {"speaker": _speaker_of(value["role"]), "text": _content_text(value["content"]),
                "id": value.get("id"), "timestamp": value.get("timestamp")}
    unknown = set(value) - _TURN_FIELDS
    if unknown:
        raise InvalidInputError(f"unknown turn field(s) {sorted(unknown)}")
    missing = {"speaker", "text"} - set(value)
    if missing:
        raise InvalidInputError(f"turn is missing field(s) {sorted(missing)}")
    return dict(value)


def _speaker_of(role: Any) -> str:
    if not isinstance(role, str) or role.strip().lower() not in ROLES:
        raise InvalidInputError(f"message role must be one of {sorted(ROLES)}, got {role!r:.40}")
    return ROLES[role.strip().lower()]


def _content_text(content: Any) -> Any:
    """A message's content as text: a string as it is, a list of parts as their text parts
    (strings or `{"type": "text", "text": ...}`) joined by line breaks."""
    if not isinstance(content, list):
        return content
    parts = [p if isinstance(p, str) else p.get("text") for p in content
             if isinstance(p, str) or (isinstance(p, Mapping) and p.get("type") == "text")]
    if not all(isinstance(p, str) for p in parts):
        raise InvalidInputError("a text part of a message's content has no text string")
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """One state of a memory: its text and refs then, and why it changed."""

    version: int
    text: str
    refs: tuple[str, ...]
    reason: str
    at: datetime
    source: str | None = None


@dataclass(slots=True)
class Memory:
    """A reflected memory: what it says, where it came from, how it is found."""

    id: str
    user_id: str
    text: str
    key: str
    refs: list[str]
    speakers: list[str] = field(default_factory=list)
    session_ids: list[str] = field(default_factory=list)
    occurred_at: datetime | None = None
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)
    versions: list[MemoryVersion] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    """What the library notes on it (A-MEM notes and links, how it was made)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """The caller's own labels (`add(..., metadata=)`, `agent_id`, `run_id`): what
    `search(filters=...)` matches on."""
    valid_to: datetime | None = None
    """When it stopped being true: the time of the memory that superseded it (None: current)."""
    superseded_by: str | None = None
    """The id of the later memory that changed what this one says."""
    supersedes: list[str] = field(default_factory=list)
    """The ids of the earlier memories this one changed."""
    changed_part: str | None = None
    """When superseded in part, the words of this memory that the successor changed (the
    rest of it still holds); None when superseded whole or not at all."""
    changed_to: str | None = None
    """The successor's words that changed it (what `hit.text` quotes after "changed")."""
    conflicts: list[str] = field(default_factory=list)
    """Memories that contradict this one without either replacing the other: shown together
    and flagged so the agent can ask which is right."""

    @property
    def valid_from(self) -> datetime:
        """When what it says became true: when it was said, else when it was stored."""
        return self.occurred_at or self.created_at

    @property
    def current(self) -> bool:
        """True until a later memory supersedes it."""
        return self.valid_to is None

    def people(self, others: Collection[str] = ("assistant",)) -> set[str]:
        """Its speakers but `others` (the assistant): in talk between people, whose fact "I"
        or "my sister" states changes from line to line."""
        skip = {s.casefold() for s in others}
        return {s for s in self.speakers if s.casefold() not in skip}

    def held_at(self, moment: datetime | None) -> bool:
        """Whether no later memory had superseded it by `moment` (None: now, as recorded)."""
        return self.valid_to is None or moment is not None and \
            as_utc(self.valid_to) > as_utc(moment)

    def validity(self) -> dict[str, Any]:
        """The supersession fields as JSON-ready values (what storage and exports keep)."""
        return {k: v for k, v in (("valid_to", iso(self.valid_to)),
                                  ("superseded_by", self.superseded_by),
                                  ("supersedes", self.supersedes),
                                  ("changed_part", self.changed_part),
                                  ("changed_to", self.changed_to),
                                  ("conflicts", self.conflicts)) if v}

    def set_validity(self, fields: dict[str, Any]) -> None:
        """Set the supersession fields from `validity()`'s form (absent keys: unset)."""
        self.valid_to = from_iso(fields.get("valid_to"))
        self.superseded_by = fields.get("superseded_by")
        self.supersedes = list(fields.get("supersedes", []))
        self.changed_part = fields.get("changed_part")
        self.changed_to = fields.get("changed_to")
        self.conflicts = list(fields.get("conflicts", []))


@dataclass(frozen=True, slots=True)
class FactChange:
    """Memory `new_id` changes memory `old_id` as of `at` (`kind` "supersedes": the old one
    stops being true then), or the two contradict each other without either replacing the
    other (`kind` "conflicts"); "none": an LLM saw the pair and found no change (nothing
    is recorded, and no rule may say otherwise)."""

    old_id: str
    new_id: str
    at: datetime
    kind: str
    part: str | None = None
    """The old memory's words that changed, when it is superseded only in part."""
    by: str | None = None
    """The new memory's words that changed it."""
    signals: tuple[str, ...] = ()
    """The evidence the rules checked (all of `write.supersede.SIGNALS` unless ablated)."""
    confidence: float = 1.0
    """How sure the change is (`rmm_core.language.change`); a rule's change is recorded
    only at `change.SURE` or above, an LLM's is taken as sure."""


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A retrieved memory; `text` is exactly what goes into the LLM's context, `score` its
    relevance to the query in [0, 1] (`rmm_core.read.score`), `rank` its place in the result,
    `current` whether what it says still holds."""

    memory: Memory
    score: float
    text: str
    rank: int
    retrieval: float | None = None
    """A candidate's fused retrieval score (z-scored BM25, dense and turn signals; it ranks
    the candidates of this one search and means nothing outside it); None on hits."""
    excerpt_refs: tuple[str, ...] | None = None
    """The turns `text` still carries words of when it is an excerpt of its memory that
    left some turns out (`rmm_core.read.excerpt`); None: all of the memory's refs."""
    current: bool = True
    """Whether what the hit says still holds as far as the memory knows (for a search with
    `as_of`: held then). False when a later memory superseded its memory, in whole or in
    part, by then (recorded on write: `memory.valid_to`), or when the search read it as an
    older version of what a newer hit says (`rmm_core.read.versions`); its text then says
    what changed it. `[h for h in hits if h.current]` keeps the current hits; the MCP
    payload, `rmm search --json` and both adapters' metadata carry this same field."""

    @property
    def refs(self) -> list[str]:
        """The ids of the source turns whose words `text` carries."""
        if self.excerpt_refs is not None:
            return list(self.excerpt_refs)
        return self.memory.refs

    def metadata(self) -> dict[str, Any]:
        """JSON-safe provenance and validity of the hit: what both adapters put in a
        document's or node's metadata."""
        memory = self.memory
        return {
            "memory_id": memory.id, "score": self.score, "rank": self.rank,
            "refs": list(self.refs), "session_ids": list(memory.session_ids),
            "occurred_at": iso(memory.occurred_at), "created_at": iso(memory.created_at),
            "updated_at": iso(memory.updated_at),
            "current": self.current,
            "valid_from": iso(memory.valid_from), "valid_to": iso(memory.valid_to),
            "superseded_by": memory.superseded_by, "supersedes": list(memory.supersedes),
            "conflicts": list(memory.conflicts),
        }

    def __repr__(self) -> str:
        return f"MemoryHit(rank={self.rank}, score={self.score:.3f}, text={_short(self.text)})"


@dataclass(slots=True, init=False)
class SearchResult(Sequence[MemoryHit]):
    """The hits of one search, best first; keeps what `feedback` needs to learn from it.

    `candidates` are the K memories retrieved before reranking, in retrieval order, each
    scored on the hits' scale (relevance in [0, 1]) with its fused retrieval score as
    `retrieval`; given as a function, they are made when first read."""

    id: str
    query: str
    user_id: str
    hits: list[MemoryHit]
    state: dict[str, Any]
    explanation: Any
    """`search(..., explain=True)`: each candidate's signals, the reranker's parts, the
    final order and the word-budget cut (`rmm_core.read.explain.Explanation`)."""
    _candidates: list[MemoryHit] | Callable[[], list[MemoryHit]]

    def __init__(self, id: str, query: str, user_id: str, hits: list[MemoryHit],
                 candidates: list[MemoryHit] | Callable[[], list[MemoryHit]] | None = None,
                 state: dict[str, Any] | None = None, explanation: Any = None) -> None:
        self.id, self.query, self.user_id, self.hits = id, query, user_id, hits
        self._candidates = [] if candidates is None else candidates
        self.state = {} if state is None else state
        self.explanation = explanation

    @property
    def candidates(self) -> list[MemoryHit]:
        """The candidates, scored when first read: most callers read only the hits."""
        if callable(self._candidates):
            self._candidates = self._candidates()
        return self._candidates

    @candidates.setter
    def candidates(self, value: list[MemoryHit] | Callable[[], list[MemoryHit]]) -> None:
        self._candidates = value

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its candidates made (a function of the search does not pickle)."""
        return (SearchResult, (self.id, self.query, self.user_id, self.hits, self.candidates,
                               self.state, self.explanation))

    def __iter__(self) -> Iterator[MemoryHit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, index):  # type: ignore[override]
        return self.hits[index]

    @property
    def memories(self) -> list[Memory]:
        return [hit.memory for hit in self.hits]

    def __repr__(self) -> str:
        hits = ", ".join(f"{h.score:.2f} {_short(h.text, 40)}" for h in self.hits)
        return (f"SearchResult(query={_short(self.query)}, {len(self.hits)} hits: [{hits}], "
                f"{len(self.candidates)} candidates)")


def _short(text: str, limit: int = 60) -> str:
    """`text` on one line, cut to `limit` characters, quoted: for reprs."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit - 1] + "…")
