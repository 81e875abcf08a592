"""JSON from outside (an import file, an MCP request), parsed strictly: no NaN or Infinity,
a bounded depth, and every failure an `InvalidInputError` rather than a traceback."""

from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidInputError

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted; real records and requests use under 10."""


def _no_constant(name: str) -> Any:
    raise InvalidInputError(f"{name} is not a JSON number")


def loads(text: str | bytes, what: str = "input") -> Any:
    """`text` parsed as JSON; `InvalidInputError` naming `what` when it is not JSON, holds
    NaN or Infinity, or nests deeper than `MAX_DEPTH`."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{what} is not JSON: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{what} is not JSON: {exc.msg} at column {exc.colno}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{what} is not UTF-8 text: {exc.reason}") from exc
    except RecursionError as exc:
        raise InvalidInputError(f"{what} nests deeper than {MAX_DEPTH} levels") from exc
    if depth(value) > MAX_DEPTH:
        raise InvalidInputError(f"{what} nests deeper than {MAX_DEPTH} levels")
    return value


def depth(value: Any) -> int:
    """How deep lists and dicts nest in `value` (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, level)
        if level <= MAX_DEPTH:  # deeper is refused anyway: stop counting
            stack.extend((child, level + 1) for child in item)
    return deepest
