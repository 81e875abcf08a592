"""The adapters' argument checks and their one error policy for memory calls made on the
app's behalf.

Bad input (`InvalidInputError`: ids, arguments, an oversized message) always raises, and
`check_arguments` finds it when an adapter is built. Any other failure of a memory call
raises when `strict`, else it is logged and the app goes on without memory (the call
yields None). LangChain's adapter runs it on calls, LlamaIndex's on awaitables.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from .errors import InvalidInputError
from .types import check_count, check_id

T = TypeVar("T")


def check_arguments(data: Mapping[str, Any], *, counts: Sequence[str] = ("k",),
                    needs_user: bool = True, roles: Collection[str] | None = None,
                    optional: Sequence[str] = ("max_words",)) -> None:
    """Check an adapter's arguments before pydantic sees them (it would wrap our typed
    errors): `memory` a `ReflectiveMemory`; `user_id` an id (unless `not needs_user`, and
    then checked only when given); `session_id` an id when given; each name in `counts`
    a positive integer when given, each in `optional` one or None; `speakers`, when given,
    a mapping of message role (one of `roles`, when given) to a speaker name. Raises
    `InvalidInputError`."""
    from .memory import ReflectiveMemory

    memory = data.get("memory")
    if not isinstance(memory, ReflectiveMemory):
        raise InvalidInputError(f"memory must be a ReflectiveMemory, not {type(memory).__name__}")
    check_id(data.get("user_id"), "user_id", optional=not needs_user)
    check_id(data.get("session_id"), "session_id", optional=True)
    for name in counts:
        check_count(data.get(name, 1), name)
    for name in optional:
        if data.get(name) is not None:
            check_count(data[name], name)
    if data.get("speakers") is not None:
        check_speakers(data["speakers"], roles)


def check_speakers(speakers: Any, roles: Collection[str] | None = None) -> None:
    """`speakers` maps message roles (each one of `roles`, when given) to speaker names."""
    if not isinstance(speakers, Mapping):
        raise InvalidInputError(f"speakers must map message roles to speaker names, not "
                                f"{type(speakers).__name__}")
    for role, name in speakers.items():
        if roles is not None and role not in roles:
            raise InvalidInputError(f"speakers has the role {role!r}; the roles are "
                                    f"{sorted(str(r) for r in roles)}")
        check_id(name, f"the speaker of {role!r}")


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
