"""The adapters' one error policy for memory calls made on the app's behalf.

Bad input (`InvalidInputError`: ids, arguments, an oversized message) always raises. Any
other failure of a memory call raises when `strict`, else it is logged and the chat goes on
without memory (the call yields None).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from rmm_core.errors import InvalidInputError

T = TypeVar("T")


async def guarded(call: Callable[[], Awaitable[T]], *, strict: bool, what: str,
                  logger: logging.Logger) -> T | None:
    """Await `call()` under the policy above."""
    try:
        return await call()
    except InvalidInputError:
        raise
    except Exception:
        if strict:
            raise
        logger.exception("reflective memory: %s; the chat goes on without it", what)
        return None
