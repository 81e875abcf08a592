"""The read calls' own arguments checked: a clear `InvalidInputError` naming the value given."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InvalidInputError
from ..types import check_unicode


def check_min_score(min_score: Any) -> float | None:
    """A relevance floor: None, or a number in [0, 1]."""
    if min_score is not None and (isinstance(min_score, bool) or not isinstance(
            min_score, (int, float)) or not 0.0 <= min_score <= 1.0):
        raise InvalidInputError(f"min_score must be a number in [0, 1], got {min_score!r}")
    return min_score


def check_texts(texts: Any, memory_ids: Sequence[str | None] | None
                ) -> tuple[list[str], list[str | None]]:
    """Texts to rerank, each valid Unicode, with one memory id (or None) per text."""
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise InvalidInputError("rerank_texts needs a query string and a list of strings")
    texts = [check_unicode(t, "text") for t in texts]
    ids = list(memory_ids) if memory_ids is not None else [None] * len(texts)
    if len(ids) != len(texts):
        raise InvalidInputError("memory_ids must be as long as texts")
    return texts, ids
