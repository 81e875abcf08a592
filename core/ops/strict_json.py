"""JSON from outside (an import file, an MCP request), parsed strictly: no NaN or Infinity
however spelt (`1e999` is valid JSON that Python reads as infinity), a bounded depth, and
every failure an `InvalidInputError` rather than a traceback."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from ..errors import InvalidInputError

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted; real records and requests use under 10."""


MAX_INT = int(sys.float_info.max)
"""The largest integer taken: beyond it a number is infinity wherever it becomes a float
(a score, a threshold), and Python refuses to read one of over 4,300 digits."""


class _OutOfRange(InvalidInputError):
    """A valid JSON number no 64-bit float holds."""


def _no_constant(name: str) -> Any:
    raise InvalidInputError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _OutOfRange(_out_of_range(text))
    return value


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > len(str(MAX_INT)) or abs(value := int(text)) > MAX_INT:
        raise _OutOfRange(_out_of_range(text))
    return value


def _out_of_range(text: str) -> str:
    shown = text if len(text) <= 24 else f"{text[:12]}...{text[-8:]} ({len(text):,} characters)"
    return f"the number {shown}, beyond a 64-bit float's range (read as infinity)"


def loads(text: str | bytes, what: str = "input") -> Any:
    """`text` parsed as JSON; `InvalidInputError` naming `what` when it is not JSON, holds
    NaN or Infinity (a literal, or a number too large for a float such as `1e999`), or nests
    deeper than `MAX_DEPTH`."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float,
                           parse_int=_bounded_int)
    except _OutOfRange as exc:
        raise InvalidInputError(f"{what} holds {exc}") from exc
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
