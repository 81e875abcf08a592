"""Which earlier memories a new one changes: supersession found without an LLM."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..types import Memory

SIGNALS = ("subject", "attribute", "cue", "value")
"""The evidence the rules weigh; `find_changes(..., off=...)` turns any of them off, so a
bench can measure what each contributes."""


@dataclass(frozen=True, slots=True)
class Change:
    """`new_id` changes `old_id` as of `at` (`kind` "supersedes"), or the two contradict each
    other without either replacing the other (`kind` "conflicts")."""

    old_id: str
    new_id: str
    at: datetime
    kind: str
    part: str | None = None
    """The old memory's words that changed, when it is superseded only in part."""
    signals: tuple[str, ...] = ()


def find_changes(new: Sequence[Memory], earlier: Sequence[Memory], *,
                 off: Collection[str] = ()) -> list[Change]:
    """The changes `new` memories make to `earlier` ones (and to each other, in time order)."""
    raise NotImplementedError
