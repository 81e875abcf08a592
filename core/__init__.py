"""rmm_core: reflective long-term memory for LLM agents (RMM + SeCom), framework-free."""

from __future__ import annotations

from .config import MemoryConfig
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
from .memory import ReflectiveMemory
from .types import Memory, MemoryHit, MemoryVersion, SearchResult, Turn

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
