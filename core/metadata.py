"""A memory's own metadata and the equality filters `search` matches it with.

Agent and run scopes (as in mem0) are two metadata keys, `agent_id` and `run_id`: written
beside `user_id` by `add`/`append`, narrowed to by `search(agent_id=, run_id=)`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .errors import InvalidInputError
from .types import check_id, check_unicode

SCOPES = ("agent_id", "run_id")
"""Metadata keys that scope memories beside the user."""

Scalar = str | int | float | bool


def check_metadata(metadata: Mapping[str, Any] | None, *, agent_id: Any = None,
                   run_id: Any = None) -> dict[str, Any]:
    """Validated metadata with the scopes set: string keys, JSON values (no NaN, no lone
    surrogate); a scope given both ways must agree."""
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError(f"metadata must be a dict, not {type(metadata).__name__}")
    out = dict(metadata)
    for key in out:
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"metadata keys must be non-empty strings, got {key!r:.40}")
    for name, value in zip(SCOPES, (agent_id, run_id)):
        if value is None:
            continue
        value = check_id(value, name)
        if out.get(name, value) != value:
            raise InvalidInputError(f"{name}={value!r} disagrees with metadata[{name!r}]="
                                    f"{out[name]!r}")
        out[name] = value
    try:
        text = json.dumps(out, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must hold JSON values only: {exc}") from exc
    check_unicode(text, "metadata")
    return out


def check_filters(filters: Mapping[str, Any] | None, *, agent_id: Any = None,
                  run_id: Any = None) -> dict[str, tuple[Scalar, ...]]:
    """Filters as key → accepted values: a scalar (str, int, float, bool) means that value,
    a non-empty list any of its values; `agent_id`/`run_id` add their keys."""
    if filters is None:
        filters = {}
    if not isinstance(filters, Mapping):
        raise InvalidInputError(f"filters must be a dict, not {type(filters).__name__}")
    out: dict[str, tuple[Scalar, ...]] = {}
    for key, value in filters.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"filter keys must be non-empty strings, got {key!r:.40}")
        values = tuple(value) if isinstance(value, (list, tuple)) else (value,)
        if not values or not all(_is_scalar(v) for v in values):
            raise InvalidInputError(f"filter {key!r} must be a str, int, float or bool, or a "
                                    f"non-empty list of them, got {value!r:.60}")
        out[key] = values
    for name, value in zip(SCOPES, (agent_id, run_id)):
        if value is not None:
            value = check_id(value, name)
            if name in out and value not in out[name]:
                raise InvalidInputError(f"{name}={value!r} disagrees with filters[{name!r}]")
            out[name] = (value,)
    return out


def matches(metadata: Mapping[str, Any], filters: Mapping[str, tuple[Scalar, ...]]) -> bool:
    """Whether every filter key is in `metadata` with one of its accepted values (a bool
    matches only a bool: `True` is not `1`)."""
    for key, accepted in filters.items():
        if key not in metadata:
            return False
        value = metadata[key]
        if not any(_same(value, a) for a in accepted):
            return False
    return True


def _is_scalar(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (str, int, bool))


def _same(value: Any, wanted: Scalar) -> bool:
    return isinstance(value, bool) == isinstance(wanted, bool) and \
        isinstance(value, (str, int, float)) and value == wanted
