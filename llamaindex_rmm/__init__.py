"""LlamaIndex adapters for rmm_core: chat memory, memory block, node postprocessor, LLM."""

from __future__ import annotations

import warnings
from typing import Any

from .block import RMMMemoryBlock
from .converters import hits_to_nodes
from .llm import wrap_llm
from .memory import RMMChatMemory
from .postprocessor import RMMReranker
from .tools import memory_tools
from .workflows import WorkflowAgentHook

__all__ = ["RMMChatMemory", "RMMMemoryBlock", "RMMReranker", "hits_to_nodes", "memory_tools",
           "WorkflowAgentHook", "wrap_llm"]


def __getattr__(name: str) -> Any:
    """`RMMMemory`, this class's name before 0.2 (LangChain's legacy class has it too): still
    importable for one release, with a warning."""
    if name == "RMMMemory":
        warnings.warn("llamaindex_rmm.RMMMemory is now RMMChatMemory; the old name goes in "
                      "the next release", DeprecationWarning, stacklevel=2)
        return RMMChatMemory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
