"""LangMem-style `manage_memory` and `search_memory` tools whose user comes from each run.

Build them once for an agent that serves many users: each call reads the user (and agent,
run) from the run like `RMMMiddleware` does (`langchain_rmm.scope`). A run without a valid
user fails loudly; a bad memory id or argument from the model comes back to it as an error
message it can act on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from langchain.tools import ToolRuntime, tool
from langchain_core.tools import BaseTool

from rmm_core import ReflectiveMemory
from rmm_core.errors import InvalidInputError, NotFoundError

from .scope import RunScope, run_scope

Action = Callable[[ReflectiveMemory, RunScope, "str | None", "str | None"], str]


def _create(mem: ReflectiveMemory, scope: RunScope, content: str | None, id: str | None
            ) -> str:
    if content is None:
        raise InvalidInputError("create needs content")
    made = mem.add(content, user_id=scope.user_id, agent_id=scope.agent_id,
                   run_id=scope.run_id)
    return f"created memory {', '.join(m.id for m in made)}"


def _update(mem: ReflectiveMemory, scope: RunScope, content: str | None, id: str | None
            ) -> str:
    if content is None or id is None:
        raise InvalidInputError("update needs the memory id and the new content")
    return f"updated memory {mem.update(id, content, user_id=scope.user_id).id}"


def _delete(mem: ReflectiveMemory, scope: RunScope, content: str | None, id: str | None
            ) -> str:
    if id is None:
        raise InvalidInputError("delete needs the memory id")
    mem.delete(id, user_id=scope.user_id)
    return f"deleted memory {id}"


ACTIONS: dict[str, Action] = {"create": _create, "update": _update, "delete": _delete}


def agent_memory_tools(memory: ReflectiveMemory, *, user_key: str = "user_id",
                       k: int = 5) -> list[BaseTool]:
    """`manage_memory` (create, update, delete one memory) and `search_memory`, scoped to
    the user of the run that calls them."""
    if not isinstance(memory, ReflectiveMemory):
        raise InvalidInputError(f"memory must be a ReflectiveMemory, not {type(memory).__name__}")

    def scope_of(runtime: ToolRuntime) -> RunScope:
        return run_scope(runtime.context, runtime.config, user_key=user_key)  # type: ignore[return-value]

    @tool
    def manage_memory(runtime: ToolRuntime, content: str | None = None,
                      action: Literal["create", "update", "delete"] = "create",
                      id: str | None = None) -> str:
        """Create, update or delete a long-term memory about the user. Create with
        `content`; update with the memory `id` and new `content`; delete with `id`."""
        scope = scope_of(runtime)
        try:
            return ACTIONS[action](memory, scope, content, id)
        except (InvalidInputError, NotFoundError) as exc:
            return f"Error: {exc}"

    @tool
    def search_memory(runtime: ToolRuntime, query: str, limit: int = k,
                      filter: dict[str, Any] | None = None) -> str:
        """Search the user's long-term memories; returns a JSON list of `id`, `content`
        and `score`. `filter` keeps memories whose metadata has those values."""
        scope = scope_of(runtime)
        try:
            hits = memory.search(query, user_id=scope.user_id, k=limit, filters=filter,
                                 agent_id=scope.agent_id, run_id=scope.run_id)
        except InvalidInputError as exc:
            return f"Error: {exc}"
        return json.dumps([{"id": h.memory.id, "content": h.text, "score": round(h.score, 4)}
                           for h in hits], ensure_ascii=False)

    return [manage_memory, search_memory]
