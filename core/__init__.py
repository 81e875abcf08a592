"""rmm_core: reflective long-term memory for LLM agents (RMM + SeCom), framework-free.

Names resolve on first use (`__getattr__`), so `import rmm_core` loads neither numpy nor
pydantic, and no model runtime until an embedder is built."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    FeedbackError,
    InvalidInputError,
    LLMError,
    LLMFallbackWarning,
    MissingDependencyError,
    NotFoundError,
    RMMError,
    StorageError,
)

if TYPE_CHECKING:
    from .config import MemoryConfig
    from .memory import ReflectiveMemory
    from .types import Memory, MemoryHit, MemoryVersion, SearchResult, Turn

_LAZY = {
    "MemoryConfig": ".config",
    "ReflectiveMemory": ".memory",
    "Memory": ".types",
    "MemoryHit": ".types",
    "MemoryVersion": ".types",
    "SearchResult": ".types",
    "Turn": ".types",
}
"""Public name -> the module that defines it, imported when the name is first used."""

__all__ = [
    "FeedbackError",
    "InvalidInputError",
    "LLMError",
    "LLMFallbackWarning",
    "Memory",
    "MemoryConfig",
    "MemoryHit",
    "MemoryVersion",
    "MissingDependencyError",
    "NotFoundError",
    "RMMError",
    "ReflectiveMemory",
    "SearchResult",
    "StorageError",
    "Turn",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'rmm_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
