"""Whose memory a LangChain run uses: user, agent and run ids read from the run itself.

LangChain users pass the user in one of three places, and all are read, first hit wins:
the run context (`context={"user_id": ...}`, a dict or an object), `config["configurable"]`
(LangMem's convention) and `config["metadata"]`. A missing user is an error unless the
caller chose `on_missing_user="disable"`; an id of the wrong type or empty always is.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rmm_core.errors import InvalidInputError
from rmm_core.types import check_id

logger = logging.getLogger(__name__)

AGENT_KEY = "agent_id"
RUN_KEY = "run_id"


@dataclass(frozen=True, slots=True)
class RunScope:
    """The ids a run's memory calls are scoped to (agent and run are optional)."""

    user_id: str
    agent_id: str | None = None
    run_id: str | None = None


def _warn_and_disable(key: str) -> None:
    logger.warning("reflective memory is off for this run: it names no %r "
                   "(on_missing_user='disable')", key)


def _raise(key: str) -> None:
    raise InvalidInputError(
        f"the run names no {key!r}: invoke with context={{{key!r}: ...}} or "
        f"config={{'configurable': {{{key!r}: ...}}}}, or build with "
        f"on_missing_user='disable' to run without memory")


ON_MISSING_USER = {"raise": _raise, "disable": _warn_and_disable}
"""What a run without a user does: raise `InvalidInputError`, or run without memory."""


def check_on_missing_user(value: object) -> str:
    if value not in ON_MISSING_USER:
        raise InvalidInputError(
            f"on_missing_user must be one of {sorted(ON_MISSING_USER)}, got {value!r}")
    return value  # type: ignore[return-value]


def lookup(key: str, context: Any, config: Mapping[str, Any] | None) -> Any:
    """The value of `key` in the run context, `configurable` or `metadata`; None if absent."""
    if isinstance(context, Mapping):
        value = context.get(key)
    else:
        value = getattr(context, key, None)
    for section in ("configurable", "metadata"):
        if value is None:
            value = ((config or {}).get(section) or {}).get(key)
    return value


def run_scope(context: Any, config: Mapping[str, Any] | None, *, user_key: str = "user_id",
              on_missing_user: str = "raise") -> RunScope | None:
    """The run's scope; None when it names no user and `on_missing_user` is "disable".

    Raises `InvalidInputError` for a missing user (by default) and for any id that is not
    a non-empty string, so a mistyped id never writes to or reads from the wrong place.
    """
    user_id = lookup(user_key, context, config)
    if user_id is None:
        ON_MISSING_USER[on_missing_user](user_key)
        return None
    return RunScope(
        user_id=check_id(user_id, user_key),  # type: ignore[arg-type]
        agent_id=check_id(lookup(AGENT_KEY, context, config), AGENT_KEY, optional=True),
        run_id=check_id(lookup(RUN_KEY, context, config), RUN_KEY, optional=True),
    )
