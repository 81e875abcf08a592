"""MemGPT's memory tools as plain callables an agent can be given (framework adapters wrap
them): edit core memory, insert into and search archival memory (the memory bank), search
the conversation log (recall storage). Bad arguments come back as an `Error: ...` string
the agent can read and correct, never as an exception."""

from __future__ import annotations

import functools
import inspect
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InvalidInputError, RMMError
from ..read.index import bm25_index, english_stemmer, tokenize
from ..text import clip, non_empty
from ..types import Turn, check_id

if TYPE_CHECKING:
    from ..types import Memory, SearchResult
    from .working import WorkingContext

ARCHIVAL_PREFIX = "archival-"
"""Session ids of agent-written notes; conversation_search leaves them out."""
ARCHIVAL_SPEAKER = "archival note"
MAX_SNIPPET = 1000


@dataclass(frozen=True, slots=True)
class MemoryTool:
    """A tool as frameworks need it: a name, what it is for, and a typed function."""

    name: str
    description: str
    fn: Callable[..., str]


def _agent_errors(fn: Callable[..., str]) -> Callable[..., str]:
    """Turn this library's errors into an `Error: ...` answer for the agent."""

    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:  # missing or unknown arguments
            return f"Error: bad arguments for {fn.__name__}: {exc}"
        try:
            return fn(*args, **kwargs)
        except RMMError as exc:
            return f"Error: {exc}"

    return wrapper


def _page(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"page must be a whole number >= 0, got {value!r}")
    return value


class ToolHost(Protocol):
    """What the tools act on (`ReflectiveMemory` is one): the memory bank, the turn log and
    the user's working context."""

    def add_session(self, turns: list[Turn], *, user_id: str, session_id: str
                    ) -> list[Memory]: ...

    def search(self, query: str, *, user_id: str, k: int = 5) -> SearchResult: ...

    def turns(self, *, user_id: str, session_id: str | None = None) -> list[Turn]: ...

    def working_context(self, *, user_id: str, **options: Any) -> WorkingContext: ...


class MemoryTools:
    """The five tools, bound to one memory and one user (and the user's working context)."""

    def __init__(self, mem: ToolHost, *, user_id: str, page_size: int = 5,
                 **working: Any) -> None:
        self.mem = mem
        self.user_id = check_id(user_id, "user_id")
        self.page_size = page_size
        self.working = mem.working_context(user_id=self.user_id, **working)

    @_agent_errors
    def core_memory_append(self, label: str, content: str) -> str:
        """Add a line to a core memory block ("human" or "persona") that stays in context."""
        block = self.working.core_memory_append(label, non_empty(content, "content"))
        return f"Appended to {block.label} ({len(block.value)}/{block.limit} chars):\n" \
               f"{block.value}"

    @_agent_errors
    def core_memory_replace(self, label: str, old_content: str, new_content: str) -> str:
        """Replace exact text in a core memory block; an empty new_content deletes it."""
        block = self.working.core_memory_replace(label, non_empty(old_content, "old_content"),
                                                 new_content)
        return f"Updated {block.label} ({len(block.value)}/{block.limit} chars):\n" \
               f"{block.value}"

    @_agent_errors
    def archival_memory_insert(self, content: str) -> str:
        """Store a note in long-term archival memory (searchable later)."""
        content = non_empty(content, "content")
        session_id = f"{ARCHIVAL_PREFIX}{uuid.uuid4().hex}"
        memories = self.mem.add_session([Turn(ARCHIVAL_SPEAKER, content)],
                                        user_id=self.user_id, session_id=session_id)
        if not memories:
            return "Logged the note, but reflection kept no memory from it."
        return "Archived as memory " + ", ".join(m.id for m in memories) + "."

    @_agent_errors
    def archival_memory_search(self, query: str, page: int = 0) -> str:
        """Search long-term archival memory; results are paged, best first."""
        query, page = non_empty(query, "query"), _page(page)
        start = page * self.page_size
        hits = self.mem.search(query, user_id=self.user_id, k=start + self.page_size)
        shown = hits.hits[start:]
        if not shown:
            return f"No archival memories match {query!r}" + (f" on page {page}." if page
                                                                else ".")
        lines = [f"[{start + i}] (memory {h.memory.id}) "
                 f"{clip(h.text, MAX_SNIPPET, flatten=False)}" for i, h in enumerate(shown)]
        return f"Archival memory, page {page}:\n" + "\n".join(lines)

    @_agent_errors
    def conversation_search(self, query: str, page: int = 0) -> str:
        """Search every past message with this user (the full conversation log)."""
        query, page = non_empty(query, "query"), _page(page)
        found = search_turns(self.mem.turns(user_id=self.user_id), query)
        start = page * self.page_size
        shown = found[start:start + self.page_size]
        if not shown:
            return f"No past messages match {query!r}" + (f" on page {page}." if page else ".")
        lines = [f"[{t.session_id} / {t.id}] {clip(t.render(), MAX_SNIPPET, flatten=False)}"
                 for t in shown]
        return (f"Past messages, page {page} ({len(found)} matches):\n" + "\n".join(lines))

    def tools(self) -> list[MemoryTool]:
        """The five tools with the descriptions an LLM sees."""
        return [MemoryTool(name, description, getattr(self, name))
                for name, description in TOOL_DESCRIPTIONS.items()]


TOOL_DESCRIPTIONS = {
    "core_memory_append": (
        "Append a line to a core memory block that is always in your context. "
        "label: 'human' (facts about the user) or 'persona' (about you); content: the text."),
    "core_memory_replace": (
        "Replace exact text in a core memory block. label: 'human' or 'persona'; "
        "old_content: text now in the block, copied exactly; new_content: its replacement "
        "('' deletes it)."),
    "archival_memory_insert": (
        "Save a note to long-term archival memory, for facts worth keeping that need not sit "
        "in context. content: the note, self-contained."),
    "archival_memory_search": (
        "Search long-term archival memory (notes and memories reflected from past sessions). "
        "query: what to look for; page: 0 for the best results, 1 for the next ones."),
    "conversation_search": (
        "Search the full log of past messages with this user, including ones no longer in "
        "context. query: words to look for; page: 0 first, 1 next."),
}


def search_turns(turns: list[Turn], query: str) -> list[Turn]:
    """BM25 over the raw turns (agent notes left out), best first; only turns that match."""
    turns = [t for t in turns if not (t.session_id or "").startswith(ARCHIVAL_PREFIX)]
    stemmer = english_stemmer()
    tokens = tokenize([query], stemmer)[0]
    index = bm25_index(tokenize([t.render() for t in turns], stemmer)) if tokens else None
    if index is None:
        return []
    scores = index.get_scores(tokens)
    order = sorted((i for i in range(len(turns)) if scores[i] > 0), key=lambda i: -scores[i])
    return [turns[i] for i in order]


def memory_tools(mem: ToolHost, *, user_id: str, **options: Any) -> list[MemoryTool]:
    """The five memory tools of one user, as framework-free callables."""
    return MemoryTools(mem, user_id=user_id, **options).tools()
