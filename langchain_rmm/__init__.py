"""LangChain adapters for rmm_core: agent middleware, LangGraph store, memory tools,
retriever, legacy-chain memory.

Names resolve lazily, so each needs only its own extra: `RMMRetriever` and
`format_memories` need `langchain-core`, `RMMMiddleware`, `RMMStore` and the tools need
`langchain` (`reflective-memory[langchain]`), `RMMMemory` needs `langchain-classic`
(`[classic]`).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from rmm_core.errors import MissingDependencyError

if TYPE_CHECKING:
    from .agent_tools import agent_memory_tools
    from .classic import RMMMemory
    from .converters import format_memories
    from .middleware import RMMMiddleware
    from .retriever import RMMRetriever
    from .store import RMMStore
    from .tools import memory_tools
    from .workflows import WorkflowMiddleware

__all__ = ["RMMMemory", "RMMMiddleware", "RMMRetriever", "RMMStore", "WorkflowMiddleware",
           "agent_memory_tools", "format_memories", "memory_tools"]

# public name -> (module, the extra that installs what it imports)
_DYNAMIC_IMPORTS: dict[str, tuple[str, str]] = {
    "RMMMemory": ("classic", "classic"),
    "RMMMiddleware": ("middleware", "langchain"),
    "RMMRetriever": ("retriever", "langchain"),
    "RMMStore": ("store", "langchain"),
    "agent_memory_tools": ("agent_tools", "langchain"),
    "format_memories": ("converters", "langchain"),
    "memory_tools": ("tools", "langchain"),
    "WorkflowMiddleware": ("workflows", "langchain"),
}


def __getattr__(name: str) -> Any:
    if name not in _DYNAMIC_IMPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, extra = _DYNAMIC_IMPORTS[name]
    try:
        value = getattr(import_module(f".{module}", __name__), name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in {"langchain", "langchain_core",
                                                    "langchain_classic", "langgraph"}:
            raise MissingDependencyError(exc.name.split(".")[0], extra) from exc
        raise
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
