"""The adapters' one error policy for memory calls made on the app's behalf.

Bad input (`InvalidInputError`: ids, arguments, an oversized message) always raises. Any
other failure of a memory call raises when `strict`, else it is logged and the agent goes
on without memory (the call yields None).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from rmm_core.errors import InvalidInputError

T = TypeVar("T")


def guarded(call: Callable[[], T], *, strict: bool, what: str,
            logger: logging.Logger) -> T | None:
    """Run `call()` under the policy above."""
    try:
        return call()
    except InvalidInputError:
        raise
    except Exception:
        if strict:
            raise
        logger.exception("reflective memory: %s; the agent goes on without it", what)
        return None
