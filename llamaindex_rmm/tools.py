"""MemGPT-style memory tools (core/archival memory, conversation search) as LlamaIndex
`FunctionTool`s."""

from __future__ import annotations

from typing import Any

from llama_index.core.tools import FunctionTool

from rmm_core import ReflectiveMemory
from rmm_core.agents.tools import memory_tools as core_memory_tools


def memory_tools(mem: ReflectiveMemory, *, user_id: str, **options: Any) -> list[FunctionTool]:
    """`core_memory_append`, `core_memory_replace`, `archival_memory_insert`,
    `archival_memory_search` and `conversation_search` for one user, as `FunctionTool`s
    (options: page size and working-context settings, see `rmm_core.agents.tools.MemoryTools`)."""
    return [FunctionTool.from_defaults(fn=tool.fn, name=tool.name, description=tool.description)
            for tool in core_memory_tools(mem, user_id=user_id, **options)]
