"""Small text helpers every stage shares: content words, a token estimate, budget counters,
clipping long text for prompts and listings."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .errors import InvalidInputError

Counter = Callable[[str], int]

_WORD = re.compile(r"[^\W_]+")
STOP_WORDS = frozenset("""a an the and or but if of to in on at by for with from is am are was
were be been do does did have has had i me my you your we our he she it its they them their this
that these what which who whom when where why how can could would should will shall may might must
please tell about just so than then there here some any as into such no not""".split())
"""English function words: what `content_words` leaves out."""


def content_words(text: str, stemmer: Callable[[list[str]], list[str]] | None = None
                  ) -> set[str]:
    """Lower-cased words that carry meaning (stop words and single letters dropped; stemmed
    when a stemmer is given): crude but dependable overlap features."""
    words = [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1]
    return set(stemmer(words) if stemmer else words)


def count_tokens(text: str) -> int:
    """About four characters per token: the rule of thumb when no tokenizer is at hand."""
    return (len(text) + 3) // 4


def count_words(text: str) -> int:
    return len(text.split())


COUNTERS: dict[str, Counter] = {"tokens": count_tokens, "words": count_words}
"""Budget units by name; a callable `str -> int` is accepted wherever a name is."""


def as_counter(unit: str | Counter) -> Counter:
    if callable(unit):
        return unit
    if unit not in COUNTERS:
        raise InvalidInputError(f"unknown budget unit {unit!r}; choose one of {sorted(COUNTERS)}")
    return COUNTERS[unit]


def clip(text: str, limit: int, *, flatten: bool = True) -> str:
    """`text` cut to at most `limit` characters, an ellipsis marking a cut; `flatten` first
    folds every run of whitespace (line breaks too) into one space."""
    if flatten:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 2] + " …"


def non_empty(value: Any, what: str) -> str:
    """`value` stripped; `InvalidInputError` unless it is a string with some text in it."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, not {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError(f"{what} must not be empty")
    return value.strip()
