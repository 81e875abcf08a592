"""Memories, hits and versions as JSON-safe dicts: what the MCP tools answer with."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..types import Memory, MemoryHit, MemoryVersion, SearchResult

DERIVED = ("valid_from", "current")
"""Properties of `Memory` shown beside its fields (when the installed core has them)."""


def jsonable(value: Any) -> Any:
    """`value` with datetimes as ISO strings, tuples and sets as lists, non-finite floats as
    None and anything else unknown as its `str`."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    return str(value)


def memory_dict(memory: Memory, *, versions: bool = False) -> dict[str, Any]:
    """Every field of a memory (its versions only when asked), with its validity."""
    out = {f.name: jsonable(getattr(memory, f.name)) for f in dataclasses.fields(memory)
           if f.name != "versions"}
    out.update({name: jsonable(getattr(memory, name)) for name in DERIVED
                if hasattr(memory, name)})
    if versions:
        out["versions"] = [version_dict(v) for v in memory.versions]
    return out


def version_dict(version: MemoryVersion) -> dict[str, Any]:
    return {f.name: jsonable(getattr(version, f.name)) for f in dataclasses.fields(version)}


def hit_dict(hit: MemoryHit) -> dict[str, Any]:
    """A hit: its rank, score and context text, then its memory's fields (the stored
    wording as `memory_text`), with `current` the hit's (`MemoryHit.current`)."""
    memory = memory_dict(hit.memory)
    memory["memory_text"] = memory.pop("text")
    memory["current"] = hit.current
    return {"rank": hit.rank, "score": jsonable(hit.score), "text": hit.text, **memory}


def result_dict(result: SearchResult) -> dict[str, Any]:
    return {"search_id": result.id, "query": result.query,
            "hits": [hit_dict(h) for h in result.hits]}
