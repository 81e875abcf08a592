"""Async twins of blocking methods: the same call, run in a worker thread (one code path)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


def in_thread(name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    """The async twin of the method `name`: the same call, run in a worker thread."""

    async def twin(self: Any, *args: Any, **kw: Any) -> Any:
        return await asyncio.to_thread(getattr(self, name), *args, **kw)

    twin.__name__ = twin.__qualname__ = f"a{name}"
    twin.__doc__ = f"`{name}` as a coroutine (run in a worker thread)."
    return twin
