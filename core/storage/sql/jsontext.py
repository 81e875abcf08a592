"""JSON text of the stores' lists and dicts (memories, versions, sessions); empty ones
(most of a bulk write's or a bank load's) skip the codec."""

from __future__ import annotations

import json
from typing import Any

_EMPTY_JSON = {list: "[]", dict: "{}"}
_EMPTY_VALUE = {"[]": list, "{}": dict}


def dumps(value: Any) -> str:
    """JSON text of a stored list or dict."""
    if not value and type(value) in _EMPTY_JSON:
        return _EMPTY_JSON[type(value)]
    return json.dumps(value)


def loads(text: str) -> Any:
    """The value of stored JSON text."""
    make = _EMPTY_VALUE.get(text)
    return make() if make is not None else json.loads(text)
