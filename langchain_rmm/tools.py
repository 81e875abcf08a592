"""MemGPT-style memory tools (core/archival memory, conversation search) as LangChain tools."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool
from pydantic import ValidationError

from rmm_core import ReflectiveMemory
from rmm_core.agents.tools import memory_tools as core_memory_tools


def _validation_message(error: ValidationError) -> str:
    problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}"
                         for e in error.errors())
    return f"Error: bad arguments ({problems})"


def memory_tools(mem: ReflectiveMemory, *, user_id: str, **options: Any) -> list[StructuredTool]:
    """`core_memory_append`, `core_memory_replace`, `archival_memory_insert`,
    `archival_memory_search` and `conversation_search` for one user, as `StructuredTool`s
    (options: page size and working-context settings, see `rmm_core.agents.tools.MemoryTools`)."""
    return [StructuredTool.from_function(func=tool.fn, name=tool.name,
                                         description=tool.description,
                                         handle_validation_error=_validation_message)
            for tool in core_memory_tools(mem, user_id=user_id, **options)]
