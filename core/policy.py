"""The adapters' one error policy for memory calls made on the app's behalf.

Bad input (`InvalidInputError`: ids, arguments, an oversized message) always raises. Any
other failure of a memory call raises when `strict`, else it is logged and the app goes on
without memory (the call yields None). LangChain's adapter runs it on calls, LlamaIndex's
on awaitables.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .errors import InvalidInputError

T = TypeVar("T")


def guarded(call: Callable[[], T], *, strict: bool, what: str,
            logger: logging.Logger) -> T | None:
    """Run `call()` under the policy above."""
    try:
        return call()
    except Exception as exc:
        _fail(exc, strict, what, logger)
        return None


async def aguarded(call: Callable[[], Awaitable[T]], *, strict: bool, what: str,
                   logger: logging.Logger) -> T | None:
    """Await `call()` under the policy above."""
    try:
        return await call()
    except Exception as exc:
        _fail(exc, strict, what, logger)
        return None


def _fail(exc: Exception, strict: bool, what: str, logger: logging.Logger) -> None:
    """Inside the `except` of a guarded call: raise `exc` again, or log it."""
    if strict or isinstance(exc, InvalidInputError):
        raise exc
    logger.error("reflective memory: %s; going on without it", what, exc_info=exc)
