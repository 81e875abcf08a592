"""The memory's MCP tools: add, search, get, update, delete, history, profile and (when the
server allows it) forget. Each resolves the user it acts for through `Access`, runs the
`ReflectiveMemory` call in a worker thread and answers with JSON; a library error becomes a
tool error carrying its type and message, and the server goes on. With an agent or run fixed,
a memory outside it is as absent as another user's; a write is bounded in size."""

# No `from __future__ import annotations`: the SDK finds the `Context` parameter by its
# annotation, which must be the installed SDK's class itself.
import inspect
import json
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Annotated, Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from ..errors import InvalidInputError, NotFoundError, RMMError
from ..memory import ReflectiveMemory
from ..metadata import check_metadata
from ..read.ranked import CONTEXT_WORDS
from ..types import Memory, as_datetime
from ..write.ingest import coerce_turns
from ..write.repeats import add_key, session_for
from .access import Access
from .payload import memory_dict, result_dict, version_dict
from .sdk import SDK

FORGET_SCOPED = ("--allow-forget cannot go with --agent-id or --run-id: `forget` erases every "
                 "agent's and run's memories of the user")
MAX_CALL_CHARS = 50_000
"""Default of `--max-call-chars`: the most text one `add` or `update` may write (a fact, or a
conversation's messages together), so that one call is a few seconds' work."""

MAX_MESSAGES = 100
"""The most messages one conversation `add` may hold: fewer than `sessions.max_turns` (200),
at which the library reflects a session as it is logged and `add` would not return those
memories."""
MAX_FILTER_VALUES = 100
"""The most values a search's `filters` may list in all (each is compared with every
candidate's metadata)."""
MAX_METADATA_CHARS = 10_000
"""The most characters a call's metadata may take as JSON (it is copied onto each memory)."""

UserId = Annotated[str | None, Field(
    description="whose memory; may be left out when the server or token serves one user")]
MemoryId = Annotated[str, Field(description="a memory id, as `add` or `search` return it")]


class Message(BaseModel):
    """One message of a conversation: a chat `role` or a free `speaker` name, and content."""

    model_config = ConfigDict(extra="forbid")
    role: str | None = Field(None, description="user, assistant, system or tool")
    speaker: str | None = Field(None, description="a speaker's name, instead of a role")
    content: str
    timestamp: str | None = Field(None, description="when it was said (ISO 8601)")


def as_turn(message: Message) -> dict[str, Any]:
    """A message in the form `Turn.coerce` reads."""
    if (message.role is None) == (message.speaker is None):
        raise InvalidInputError("a message has either a role or a speaker")
    if message.role is not None:
        return {"role": message.role, "content": message.content,
                "timestamp": message.timestamp}
    return {"speaker": message.speaker, "text": message.content,
            "timestamp": message.timestamp}


def check_size(content: str | list[Message], metadata: Mapping[str, Any] | None,
               max_chars: int) -> None:
    """Refuse a write larger than the server takes in one call (`InvalidInputError`), before
    anything is embedded or stored: a huge one would hold the server for minutes."""
    if isinstance(content, list) and len(content) > MAX_MESSAGES:
        raise InvalidInputError(f"a conversation has {len(content):,} messages; this server "
                                f"takes at most {MAX_MESSAGES:,} in one call: split it")
    chars = len(content) if isinstance(content, str) else \
        sum(len(m.content) + len(m.speaker or m.role or "") for m in content)
    if chars > max_chars:
        raise InvalidInputError(f"the text has {chars:,} characters; this server takes at most "
                                f"{max_chars:,} in one call (rmm mcp --max-call-chars): split "
                                "it into several calls")
    size = len(json.dumps(metadata, ensure_ascii=False, default=str)) if metadata else 0
    if size > MAX_METADATA_CHARS:
        raise InvalidInputError(f"metadata takes {size:,} characters as JSON; at most "
                                f"{MAX_METADATA_CHARS:,}")


def check_filters_size(filters: Mapping[str, Any] | None) -> None:
    """Refuse filters listing more values than `MAX_FILTER_VALUES` (`InvalidInputError`)."""
    if not isinstance(filters, Mapping):
        return
    values = sum(len(v) if isinstance(v, list) else 1 for v in filters.values())
    if values > MAX_FILTER_VALUES:
        raise InvalidInputError(f"filters list {values:,} values; at most "
                                f"{MAX_FILTER_VALUES} in one search")


def session_of(messages: list[dict[str, Any]], occurred_at: str | None,
               key: str) -> dict[str, Any]:
    """A conversation's session: a readable id (`mcp-<date>-<16 hex digits of key>`, so its
    turns' refs read `mcp-2024-05-01-3f9a1c2b5d7e9f01:1`; `key` is the add's identity, so
    that a retried call names the same session and adds nothing) and its date:
    `occurred_at`, else the first message's timestamp, else the time of the call, so that
    its memories are dated as the library's are when a session has a start."""
    started = as_datetime(occurred_at, "occurred_at")
    if started is None:
        stamps = [m["timestamp"] for m in messages if m.get("timestamp") is not None]
        started = as_datetime(stamps[0], "turn timestamp") if stamps else \
            datetime.now(timezone.utc)
    return {"session_id": f"mcp-{started.date().isoformat()}-{session_for(key, 16)}",
            "started_at": started}


def in_scope(found: Memory, scope: Mapping[str, str]) -> bool:
    """Whether a memory belongs to the agent and run the server is fixed to (`--agent-id`,
    `--run-id`); with none fixed, every memory of the user does."""
    return all(found.metadata.get(name) == value for name, value in scope.items())


def answer(value: dict[str, Any]) -> str:
    """A tool's answer: compact JSON text. Plain text rather than MCP structured content,
    which the SDK's client validates against a schema on every call (it doubled the
    protocol's cost of a search) and which hosts show the model as text anyway."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def bearer_token(ctx: Any) -> str | None:
    """The bearer token the HTTP layer verified for this call (None over stdio)."""
    try:
        request = ctx.request_context.request
    except (LookupError, ValueError, AttributeError):  # called in-process, not by a client
        return None
    user = request.scope.get("user") if request is not None else None
    token = getattr(user, "access_token", None)
    return token.token if token is not None else None


def register(server: Any, sdk: SDK, memory: ReflectiveMemory, access: Access, *,
             allow_forget: bool = False, max_chars: int = MAX_CALL_CHARS) -> list[str]:
    """Add the tools to `server`; returns their names. A call writes at most `max_chars`
    characters of text."""
    Context = sdk.context  # noqa: N806 - the SDK's class, used as an annotation
    scope = access.fixed_scope
    if allow_forget and scope:
        raise InvalidInputError(FORGET_SCOPED)

    def scoped(memory_id: str, user: str) -> Memory:
        """The user's memory, if it is in the server's agent and run scope: one outside it
        is as absent as another user's (`NotFoundError`, the same message)."""
        found = memory.get(memory_id, user_id=user)
        if not in_scope(found, scope):
            raise NotFoundError(f"no memory {memory_id!r} for this user")
        return found

    async def run(ctx: Any, asked: str | None, call: Callable[[str], dict[str, Any]]) -> str:
        """`call` for the user the caller may act for, and its answer as JSON, both in a
        worker thread (the event loop goes on serving other calls meanwhile)."""
        try:
            user = access.user_for(asked, bearer_token(ctx))
            return await anyio.to_thread.run_sync(lambda: answer(call(user)))
        except RMMError as exc:
            raise sdk.tool_error(f"{type(exc).__name__}: {exc}") from exc

    async def add(
        content: Annotated[str | list[Message], Field(
            description="a fact to remember as it is, or a conversation: a list of messages")],
        ctx: Context, user_id: UserId = None, agent_id: str | None = None,
        run_id: str | None = None, metadata: dict[str, Any] | None = None,
        occurred_at: Annotated[str | None, Field(
            description="an ISO 8601 date: when it was said (default now)")] = None,
    ) -> str:
        """Remember a fact (stored and searchable at once) or a conversation (logged as a new
        session and reflected into memories now). Returns the memories added or merged; an
        earlier memory it changes (a move, a new date) is marked superseded. A call repeated
        (a retry) stores nothing twice: a fact returns the memories it made, a conversation
        none."""
        def write(user: str) -> dict[str, Any]:
            check_size(content, metadata, max_chars)
            scopes = {"agent_id": access.scope("agent_id", agent_id),
                      "run_id": access.scope("run_id", run_id)}
            if isinstance(content, str):
                added = memory.add(content, user_id=user, metadata=metadata,
                                   occurred_at=occurred_at, **scopes)
            else:
                turns = [as_turn(m) for m in content]
                key = add_key(user, coerce_turns(turns), check_metadata(metadata, **scopes),
                              as_datetime(occurred_at, "occurred_at"))
                added = memory.add_session(turns, user_id=user, metadata=metadata,
                                           **session_of(turns, occurred_at, key), **scopes)
            return {"added": [memory_dict(m) for m in added]}

        return await run(ctx, user_id, write)

    async def search(
        query: str, ctx: Context, user_id: UserId = None,
        k: Annotated[int | None, Field(
            description="how many hits at most (default: as many as max_words holds)")] = None,
        max_words: Annotated[int | None, Field(
            description="the hits' texts hold at most this many words, in rank order "
                        f"(default {CONTEXT_WORDS}; null: no word budget, k hits)")
        ] = CONTEXT_WORDS,
        filters: Annotated[dict[str, Any] | None, Field(
            description="keep memories whose metadata has each key with that value "
                        "(a list: any of them)")] = None,
        agent_id: str | None = None, run_id: str | None = None,
        min_score: Annotated[float | None, Field(description="drop hits below this score "
                                                             "(0 to 1)")] = None,
        as_of: Annotated[str | None, Field(
            description="an ISO 8601 date: search what was true then (memories said by "
                        "that date and not yet superseded)")] = None,
    ) -> str:
        """Search the user's memories: the best hits first (rank 1 is the best) while their
        texts fit max_words, each with its score in [0, 1] (never rising down the list),
        the turns it came from (refs), its sessions, dates and validity (a memory a later
        one superseded says so and comes after it)."""
        def find(user: str) -> dict[str, Any]:
            check_filters_size(filters)
            return result_dict(memory.search(
                query, user_id=user, k=k,
                max_words=max_words, filters=filters,
                agent_id=access.scope("agent_id", agent_id),
                run_id=access.scope("run_id", run_id), min_score=min_score, as_of=as_of))

        return await run(ctx, user_id, find)

    async def get(memory_id: MemoryId, ctx: Context, user_id: UserId = None
                  ) -> str:
        """One memory with its version history."""
        return await run(ctx, user_id, lambda user: memory_dict(
            scoped(memory_id, user), versions=True))

    async def update(memory_id: MemoryId, text: str, ctx: Context, user_id: UserId = None,
                     metadata: dict[str, Any] | None = None) -> str:
        """Replace what a memory says (a new version; where it came from stays)."""
        def rewrite(user: str) -> dict[str, Any]:
            check_size(text, metadata, max_chars)
            scoped(memory_id, user)
            if isinstance(metadata, Mapping):  # a memory cannot be moved out of the scope
                access.keeps_scope(metadata)
            return memory_dict(memory.update(memory_id, text, user_id=user, metadata=metadata),
                               versions=True)

        return await run(ctx, user_id, rewrite)

    async def delete(memory_id: MemoryId, ctx: Context, user_id: UserId = None
                     ) -> str:
        """Delete a memory and its versions (gone from search at once)."""
        def remove(user: str) -> dict[str, Any]:
            scoped(memory_id, user)
            memory.delete(memory_id, user_id=user)
            return {"deleted": memory_id}

        return await run(ctx, user_id, remove)

    async def history(memory_id: MemoryId, ctx: Context, user_id: UserId = None
                      ) -> str:
        """A memory's versions, oldest first: created, merged into, updated."""
        return await run(ctx, user_id, lambda user: {
            "memory_id": memory_id,
            "versions": [version_dict(v) for v in scoped(memory_id, user).versions]})

    async def profile(ctx: Context, user_id: UserId = None) -> str:
        """The user's working context (core memory blocks, the summary of earlier messages,
        recent messages) as the agent's prompt shows it, and how many memories they have."""

        def read(user: str) -> dict[str, Any]:
            working = memory.working_context(user_id=user)
            return {"user_id": user, "blocks": {b.label: b.value
                                                for b in working.blocks.values()},
                    "summary": working.summary,
                    "messages": [{"speaker": t.speaker, "text": t.text}
                                 for t in working.messages],
                    "context": working.render(),
                    "memories": sum(in_scope(m, scope) for m in memory.memories(user_id=user))
                    if scope else memory.store.counts(user)["memories"]}

        return await run(ctx, user_id, read)

    async def forget(ctx: Context, user_id: UserId = None) -> str:
        """Erase everything the user has: turns, sessions, memories, versions, working
        context. It cannot be undone."""
        def erase(user: str) -> dict[str, Any]:
            memory.forget(user_id=user)
            return {"forgotten": True}

        return await run(ctx, user_id, erase)

    tools = [add, search, get, update, delete, history, profile]
    if allow_forget:
        tools.append(forget)
    for tool in tools:
        server.add_tool(tool, name=tool.__name__, description=inspect.getdoc(tool),
                        structured_output=False)
    return [t.__name__ for t in tools]
