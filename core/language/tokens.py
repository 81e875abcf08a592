"""One tokeniser for every script, shared by BM25 and the LLM-free compressor.

A word is a run of letters, combining marks and digits of any script (`re`'s `\\w` lacks
the marks, so it splits Devanagari or Thai words apart). Scripts written without spaces
between words (Han, kana, Hangul, Thai, Lao, Khmer, Myanmar) give BM25 each character and
each overlapping pair of characters, so "小狗" finds "我昨天在上海领养了一只小狗" and "狗"
finds it too; words of other scripts are BM25 terms of two or more characters, as bm25s's
default pattern makes them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import regex

_LETTER = r"[\p{L}\p{M}\p{N}]"
_UNSPACED = "".join(rf"\p{{scx={script}}}" for script in (
    "Han", "Hiragana", "Katakana", "Hangul", "Thai", "Lao", "Khmer", "Myanmar"))

WORD = regex.compile(rf"{_LETTER}(?:{_LETTER}|['’\-])*|\S")
"""The compressor's tokens: words (apostrophes and hyphens kept inside), else one symbol."""

_TERM = regex.compile(
    rf"(?V1)(?P<run>[[\p{{L}}\p{{M}}\p{{N}}]&&[{_UNSPACED}]]+)"
    rf"|[[\p{{L}}\p{{M}}\p{{N}}]--[{_UNSPACED}]]{{2,}}")
_GRAPHEME = regex.compile(r"\X")
_ASCII_TERM = re.compile(r"[a-z0-9]{2,}")
"""`_TERM` on lower-cased ASCII text, where NFKC changes nothing and no script is unspaced:
the same terms, eight times faster, for the texts most searches read."""


def terms(text: str) -> list[str]:
    """BM25 terms of one text: NFKC-normalised, lower-cased words, and for unspaced
    scripts each character (grapheme) and each overlapping pair of them."""
    return _ASCII_TERM.findall(text.lower()) if text.isascii() else _any_script_terms(text)


_LATIN = "\x00-\u02bb\u02bd-\u02ff\u1e00-\u1eff\u2000-\u206f\u20a0-\u20cf\u2100-\u2bff" \
    "\U0001f000-\U0001faff"
"""Latin letters, punctuation, symbols and emoji: characters that `re` counts as letters
and digits exactly where `_TERM` counts a word's (no combining mark, no unspaced script;
`tests/language/test_tokens.py` checks each one)."""
_BEYOND_LATIN = re.compile(f"[^{_LATIN}]")
_LATIN_TERM = re.compile(r"[^\W_]{2,}")
"""`_TERM` on text of `_LATIN` characters: accented text is read four times faster."""


def _any_script_terms(text: str) -> list[str]:
    """`terms` of a text in any script."""
    text = unicodedata.normalize("NFKC", text).lower()
    if not _BEYOND_LATIN.search(text):
        return _LATIN_TERM.findall(text)
    return _script_terms(text)


def _script_terms(text: str) -> list[str]:
    """`terms` of a normalised, lower-cased text, with `_TERM`."""
    out: list[str] = []
    for match in _TERM.finditer(text):
        if match["run"] is None:
            out.append(match[0])
            continue
        chars = _GRAPHEME.findall(match["run"])
        out += chars
        out += [a + b for a, b in zip(chars, chars[1:])]
    return out


def tokenize(texts: Iterable[str], stemmer: Callable | None = None,
             drop: Iterable[str] = ()) -> list[list[str]]:
    """BM25 tokens of each text: `terms`, English stop words (bm25s's list, and `drop`)
    removed, stemmed; what bm25s's `Tokenizer` gives, without its vocabulary and progress
    bookkeeping, which cost more than the tokens on the short texts a search reads.

    `stemmer` maps a list of words to their stems (PyStemmer's `stemWords`).
    """
    drop = frozenset(drop)
    return [list(_kept(text, stemmer, drop)) for text in texts]


def tokenize_together(texts: Sequence[str], stemmer: Callable | None = None,
                      drop: Iterable[str] = ()) -> list[list[str]]:
    """`tokenize`'s tokens of texts read together, uncached, with one stemmer call for all
    their words: a memory's sentences, read once each (a call per sentence and the
    caches' lookups cost more than the stems)."""
    drop = frozenset(drop)
    words = [_unstopped(text) for text in texts]
    flat = [w for said in words for w in said]
    stems = iter(stemmer(flat) if stemmer is not None and flat else flat)
    return [[stem for w, stem in zip(said, stems) if w not in drop] for said in words]


@lru_cache(maxsize=16384)
def _kept(text: str, stemmer: Callable | None, drop: frozenset[str]) -> tuple[str, ...]:
    """The stems of `text`'s words not in `drop` (cached with the words they come from)."""
    return tuple(stem for word, stem in _stemmed(text, stemmer) if word not in drop)


@lru_cache(maxsize=16384)
def _stemmed(text: str, stemmer: Callable | None) -> tuple[tuple[str, str], ...]:
    """Each of `terms` that is no English stop word, with its stem; cached, since a search
    reads the same memories' texts query after query."""
    words = _unstopped(text)
    stems = stemmer(words) if stemmer is not None and words else words
    return tuple(zip(words, stems))


def _unstopped(text: str) -> list[str]:
    """`terms` of a text that are no English stop word: what gets stemmed."""
    stop = stop_words("en")
    return [w for w in terms(text) if w not in stop]


@lru_cache(maxsize=8)
def stop_words(*languages: str) -> frozenset[str]:
    """bm25s's stop words of `languages` ("en", "german", "french", ...), lowercased;
    imported on first use: importing the package loads no retrieval library."""
    import bm25s.stopwords as lists

    return frozenset(w.lower() for name in languages
                     for w in getattr(lists, f"STOPWORDS_{name.upper()}"))


def english_stemmer() -> Callable | None:
    """PyStemmer's English stemmer when installed (extra `stem`), else no stemming."""
    try:
        import Stemmer
    except ImportError:
        return None
    return Stemmer.Stemmer("english").stemWords
