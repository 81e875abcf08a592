"""Whether texts are English, for the one choice that needs it: which model embeds a new
store (`rmm_core.models.embed_choice`).

Letters mostly beyond Latin are another language. Latin-script text is English when its
stop words are more English than of any one of the other languages bm25s lists (Danish,
Dutch, French, German, Italian, Norwegian, Portuguese, Spanish, Swedish, Turkish), unless
many of its words hold a letter English does not write (Polish, Czech, Romanian). Fewer
than `MIN_WORDS` words tell nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

import regex

from .tokens import stop_words

OTHERS = ("danish", "dutch", "french", "german", "italian", "norwegian", "portuguese",
          "spanish", "swedish", "turkish")
MIN_WORDS = 8
"""Fewest words that tell a language."""
MIN_LETTERS = 12
"""Fewest letters that tell a script."""
ENGLISH = "english"
ACCENTED = 0.2
"""Share of words with a letter beyond a-z above which Latin text is not English (one in
ten German words has an umlaut or ß; most Polish sentences have several)."""

_WORD = regex.compile(r"[\p{L}\p{M}]+")
_LATIN = regex.compile(r"\p{Latin}")
_PLAIN = regex.compile(r"[a-z]+")


def language(texts: Iterable[str]) -> str | None:
    """What `texts` read as: `ENGLISH`, "non-Latin script", one of `OTHERS` or "accented
    Latin"; None when they say too little to tell."""
    words = [w.lower() for text in texts for w in _WORD.findall(text)]
    letters = "".join(words)
    if len(letters) >= MIN_LETTERS and len(_LATIN.findall(letters)) < len(letters) / 2:
        return "non-Latin script"  # Chinese has few "words": its runs have no spaces
    if len(words) < MIN_WORDS:
        return None
    english = sum(w in _english() for w in words)
    counts = {name: sum(w in listed for w in words) for name, listed in _others().items()}
    best = max(counts, key=counts.get)
    if counts[best] > english:
        return best
    if sum(not _PLAIN.fullmatch(w) for w in words) > ACCENTED * len(words):
        return "accented Latin"
    return ENGLISH


@cache
def _english() -> frozenset[str]:
    """bm25s's longer English list (its short one lacks "have", "was") of three letters or
    more, as the others'."""
    return frozenset(w for w in stop_words("en_plus") if len(w) > 2)


@cache
def _others() -> dict[str, frozenset[str]]:
    """Each other language's stop words of three letters or more that are not English ones
    ("die", "und", "chez"; not "i", Danish and English, nor "on", French and English)."""
    english = stop_words("en_plus")
    return {name: frozenset(w for w in stop_words(name) - english if len(w) > 2)
            for name in OTHERS}
