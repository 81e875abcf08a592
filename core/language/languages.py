"""Which language a text is written in, as far as the rules need to know: the closed word
classes that read how something is said (`stance`) and what it claims (`claims`) know six
languages; a statement in any other is no evidence of a change, whatever it looks like.

A guess from the text alone: its script, the letters only some languages use, and how many
of its words are the stop words of each language bm25s lists. Short chat messages carry few
of them, so a text the counts cannot place is read as unknown.
"""

from __future__ import annotations

from functools import cache, lru_cache

import regex

from .tokens import stop_words, terms

READ = frozenset({"en", "de", "fr", "es", "it", "pt"})
"""The languages the rules read."""

_LISTS = {"en": "en_plus", "de": "german", "fr": "french", "es": "spanish", "it": "italian",
          "pt": "portuguese", "nl": "dutch", "sv": "swedish", "da": "danish", "no": "norwegian",
          "tr": "turkish"}
"""bm25s's stop-word lists of the languages written in Latin letters."""
_OTHER_LETTERS = regex.compile(r"[ąćęłńśźżğışåøæřůěťďňőűĄĆĘŁŃŚŹŻĞŞÅØÆŘŮĚŤĎŇŐŰ]")
"""Letters of Latin-script languages the rules do not read (Polish, Turkish, Nordic, Czech,
Hungarian...): one is enough."""
_NOT_LATIN = regex.compile(r"[\p{L}--\p{Script=Latin}]", regex.VERSION1)


MIN_WORDS = 8
"""Fewest words of Latin-script text that tell its language for a choice that lasts (which
model embeds a new store); the rules read one message at a time and take what it says."""
MIN_LETTERS = 12
"""Fewest letters that tell another script for such a choice."""


def language(text: str, *, least: int = 0) -> str | None:
    """The ISO 639-1 code of the text's language among those with a stop-word list, "xx"
    for one written in other letters or another script, None when the text says too little
    to tell (with `least`: fewer words, or fewer than `MIN_LETTERS` letters of a script)."""
    if least:
        letters = regex.findall(r"\p{L}", text)
        scripted = len(_NOT_LATIN.findall(text)) > len(letters) / 2
        if len(letters) < MIN_LETTERS or not scripted and len(terms(text)) < least:
            return None
    return _language(text)


def reads(text: str) -> bool:
    """Whether the rules read the text's language."""
    return _language(text) in READ


@lru_cache(maxsize=8192)
def _language(text: str) -> str | None:
    letters = regex.findall(r"\p{L}", text)
    if not letters:
        return None
    if len(_NOT_LATIN.findall(text)) > len(letters) / 2 or _OTHER_LETTERS.search(text):
        return "xx"
    words = terms(text)
    counts = {code: sum(w in _stop_words(name) for w in words) for code, name in _LISTS.items()}
    most = max(counts.values())
    leaders = [code for code, n in counts.items() if n == most]
    if not most or len({code in READ for code in leaders}) > 1:
        return None  # nothing to go by, or as much for a language read as for one not
    return leaders[0]


@cache
def _stop_words(name: str) -> frozenset[str]:
    return stop_words(name)


@lru_cache(maxsize=32)
def stop_words_of(code: str | None) -> frozenset[str]:
    """The stop words of a language (`language`'s code) and of English, which chat mixes
    into every language; of every Latin-script language listed when the code is none of
    them (a word one language stops on is content in another: Italian stops on "dell")."""
    if code in _LISTS:
        return _stop_words(_LISTS[code]) | _stop_words("en_plus")
    return frozenset().union(*(_stop_words(name) for name in _LISTS.values()))
