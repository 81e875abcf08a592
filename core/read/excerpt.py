"""Hits cut to the words that bear on the question, so that a context budget reaches more
memories: questions whose evidence is spread over many turns and sessions need many short
hits, not a few long ones.

The first WHOLE hits stay whole (the context around the best evidence). Every later hit
keeps, of a memory that holds several speakers' turns, only the turns of the speakers the
question names ("What has Melanie painted?": Melanie's own words); and when it is still
longer than EXCERPT_WORDS, only its sentences sharing most of the question's words (`_keys`:
the first letters of their stems, so "arbeitet" meets "arbeite"; ties broken by how close
their turn is to the question), in their order. A colon does not end a
sentence: what follows "Quick question:" is what it introduces. A question that asks for a
list, a count, an order or a summary (`gathers`) is served by gathering: the later hits are
cut to GATHER_WORDS instead, so that many distinct hits fit.
So is a question that asks for a judgement ("Would Ana enjoy a cooking class?"): no one
turn says its answer. A hit's `refs` then name only the turns it still carries words of.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ..language.tokens import stop_words, tokenize, tokenize_together
from ..types import MemoryHit
from .index import QUESTION_WORDS

WHOLE = 2
"""Hits kept whole at the head of the list."""

EXCERPT_WORDS = 60
"""Words a later hit is cut to (its date and notes included), as long as the passages a
plain vector store cuts: the excerpt competes on what it holds, not on being shorter."""

GATHER_WORDS = 30
"""Words a hit is cut to for a question that gathers: about one sentence per event."""

GATHERING = re.compile(
    r"\b(?:lists?|order|sequence|timeline|chronolog\w*|summar\w*|overview|recap|how many|"
    r"how often|number of|count|all|every|each|both|in common|across|throughout|over time|"
    r"so far|progress\w*|evolv\w*)\b"
    r"|\b(?:what|which)\s+(?:\S+\s+)?(?!(?:is|was|does|has|this|its|his|as|us)\b)\w{3,}s\b",
    re.IGNORECASE)
"""Words of a question that asks for several things or an aggregate of them: a list, a
count, an order, a summary, or things in the plural ("which cities has Jon visited?")."""

JUDGING = re.compile(r"\b(?:would|might|could|likely|probably)\b", re.IGNORECASE)
"""Words of a question that asks for a judgement rather than a stated fact: what someone
would enjoy, might do next, is likely to be, or what you would suggest. No one turn says
the answer; it is weighed from many things the person said, so it gathers too."""

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\s*\n\s*")
"""Where a sentence (or clause) ends: after its punctuation, or at a line break."""


@dataclass(frozen=True, slots=True)
class _Turn:
    """One turn's words in a memory: its speaker label, its sentences with their word counts
    and `_keys`, and its turn id (None: the memory is one passage whose refs stand
    together). Read once per memory (`_turns`)."""

    label: str
    sentences: tuple[str, ...]
    ref: str | None
    sizes: tuple[int, ...]
    keys: tuple[frozenset[str], ...]


@dataclass(frozen=True, slots=True)
class _Part:
    """One turn of a hit to cut, with its closeness to the question."""

    turn: _Turn
    closeness: float


def excerpts(hits: Sequence[MemoryHit], query: str, query_vec: np.ndarray,
             rows: Mapping[str, np.ndarray], stemmer: Callable | None = None, *,
             speakers: set[str] | None = None, whole: int = WHOLE) -> list[MemoryHit]:
    """`hits` in the same order, those after the first `whole` cut to what bears on `query`
    (to GATHER_WORDS when it `gathers`, else EXCERPT_WORDS; `rows`: memory id -> its
    vector rows, its own then its turns', where known). The query names speakers among
    `speakers` (default: the later hits'), so that a longer list cuts its head alike; a
    hit's cut depends on nothing else, so a list can be cut a slice at a time (`whole=0`
    for a slice past the head)."""
    if len(hits) <= whole:
        return list(hits)
    words = GATHER_WORDS if gathers(query) else EXCERPT_WORDS
    if speakers is None:
        speakers = {s for h in hits[whole:] for s in h.memory.speakers}
    names = _named(query, speakers)
    asked = _keys(query, stemmer)
    return [_excerpt(h, parts, asked, words)
            if i >= whole and not _fits(h, names, words)
            and (parts := _parts(h, names, query_vec, rows.get(h.memory.id), stemmer)) is not None
            else h for i, h in enumerate(hits)]


KEY = 5
"""Letters of a stem that a question's word and a sentence's compare: a stemmer of one
language cannot tell "arbeitet" is "arbeite", its first letters can."""


@lru_cache(maxsize=16384)
def _keys(text: str, stemmer: Callable | None) -> frozenset[str]:
    """What a text's words say, for the overlap that picks sentences: each stem's first KEY
    letters, without the question words and the stop words of the six languages read."""
    return _key_set(tokenize([text], stemmer, _dropped())[0])


def _key_set(stems: Sequence[str]) -> frozenset[str]:
    """Each stem's first KEY letters."""
    return frozenset(w[:KEY] for w in stems)


@lru_cache(maxsize=1)
def _dropped() -> frozenset[str]:
    """The question words and the other five languages' stop words (loaded on first use:
    importing the package loads no retrieval library)."""
    return QUESTION_WORDS | stop_words("german", "french", "spanish", "italian", "portuguese")


def gathers(query: str) -> bool:
    """Whether the query asks for a list, a count, an order or a summary (`GATHERING`), or
    for a judgement (`judges`)."""
    return bool(GATHERING.search(query)) or judges(query)


def judges(query: str) -> bool:
    """Whether the query asks for a judgement weighed from many statements (`JUDGING`)."""
    return bool(JUDGING.search(query))


def _named(query: str, speakers: set[str]) -> set[str]:
    """The speakers whose names the query says (as whole words, any case)."""
    return {s for s in speakers if s.strip() and
            re.search(rf"(?<!\w){re.escape(s.strip())}(?!\w)", query, re.IGNORECASE)}


def _fits(hit: MemoryHit, names: set[str], words: int) -> bool:
    """Whether a hit stays as it is: it fits in `words` and keeping the named speakers'
    turns would drop none of its own."""
    return len(hit.text.split(None, words)) <= words and \
        not _thins(names, set(hit.memory.speakers))


def _thins(names: set[str], said: set[str]) -> bool:
    """Whether the named speakers are some but not all of those who said a hit's turns:
    the hit then keeps only the named ones' turns."""
    return bool(names & said) and not said <= names


def _parts(hit: MemoryHit, names: set[str], query_vec: np.ndarray,
           rows: np.ndarray | None, stemmer: Callable | None) -> list[_Part] | None:
    """The hit's turns as parts, only the named speakers' when some but not all of its
    speakers are named; None when the hit cannot be cut (its memory's text is not in it)."""
    memory = hit.memory
    if memory.text not in hit.text:
        return None
    turns = _turns(memory.text, tuple(memory.speakers), tuple(memory.refs), stemmer)
    if turns is None:
        return None
    if len(turns) == 1 and turns[0].ref is None:
        return [_Part(turns[0], 0.0)]
    close = rows[1:] @ query_vec if rows is not None and len(rows) == len(turns) + 1 \
        else np.zeros(len(turns))
    parts = [_Part(turn, c) for turn, c in zip(turns, close.tolist())]
    said = {p.turn.label[:-2] for p in parts}
    if _thins(names, said):
        parts = [p for p in parts if p.turn.label[:-2] in names]
    return parts


@lru_cache(maxsize=8192)
def _turns(text: str, speakers: tuple[str, ...], refs: tuple[str, ...],
           stemmer: Callable | None) -> tuple[_Turn, ...] | None:
    """A memory's text as its turns, or as one passage (turn id None) when its refs stand
    together; None when several turns' words cannot be told apart. Cached: a search cuts
    the same memories query after query."""
    lines = text.split("\n")
    labels = [_label(line, speakers) for line in lines]
    if len(lines) == len(refs) > 1 and all(labels):
        return tuple(_turn(label, line[len(label):], ref, stemmer)
                     for line, label, ref in zip(lines, labels, refs))
    if len(refs) > 1:  # which words are whose turn's is not known: keep all
        return None
    label = _label(text, speakers)
    return (_turn(label, text[len(label):], None, stemmer),)


def _turn(label: str, text: str, ref: str | None, stemmer: Callable | None) -> _Turn:
    """One turn's text read into sentences, their word counts and keys."""
    sentences = tuple(_split(text))
    said = tokenize_together(sentences, stemmer, _dropped())
    return _Turn(label, sentences, ref, tuple(_words(s) for s in sentences),
                 tuple(map(_key_set, said)))


def _label(line: str, speakers: Sequence[str]) -> str:
    """The `speaker: ` that starts a context line ('' when none of `speakers` does)."""
    return next((f"{s}: " for s in speakers if line.startswith(f"{s}: ")), "")


def _split(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text) if s.strip()]


@lru_cache(maxsize=65536)
def _words(text: str) -> int:
    """How many words a sentence or label has; cached: the same memories' sentences are
    weighed search after search."""
    return len(text.split())


def _excerpt(hit: MemoryHit, parts: list[_Part], asked: frozenset[str],
             words: int) -> MemoryHit:
    """The hit with its memory's text replaced by the parts' best sentences that fit in
    `words`, in their order (when none fits, the best one cut to fit): those sharing most of
    the question's `asked` keys, then those of the turn closest to it."""
    head, _, tail = hit.text.partition(hit.memory.text)
    room = words - len(head.split()) - len(tail.split())
    turns = [p.turn for p in parts]
    ranked = _ranked(parts, asked)
    smallest = min((min(t.sizes) for t in turns if t.sizes), default=0)
    kept: dict[tuple[int, int], str] = {}
    carried: set[int] = set()
    for i, j in ranked:
        turn = turns[i]
        size = turn.sizes[j] + (0 if i in carried else _words(turn.label))
        if size <= room:
            kept[i, j] = turn.sentences[j]
            carried.add(i)
            room -= size
            if room < smallest:  # no sentence fits any more (each has a word)
                break
    if not kept and ranked:
        i, j = ranked[0]
        cut = max(1, room - len(turns[i].label.split()))
        kept[i, j] = " ".join(turns[i].sentences[j].split()[:cut])
        carried.add(i)
    by_part: dict[int, list[str]] = {}
    for i, j in sorted(kept):
        by_part.setdefault(i, []).append(kept[i, j])
    lines = [turns[i].label + " ".join(said) for i, said in by_part.items()]
    refs = [turns[i].ref for i in sorted(carried) if turns[i].ref is not None]
    text = head + "\n".join(lines) + tail
    if text == hit.text:
        return hit
    return replace(hit, text=text, excerpt_refs=tuple(refs) if refs else None)


def _ranked(parts: list[_Part], asked: frozenset[str]) -> list[tuple[int, int]]:
    """Each (part, sentence) in the order `_excerpt` keeps them: most of the `asked` keys
    shared first, then the part closest to the question, then the first said. Most
    sentences share none; they keep the order of their parts and places."""
    shared, rest = [], []
    order = enumerate(parts) if len(parts) == 1 else \
        sorted(enumerate(parts), key=lambda part: -part[1].closeness)
    for i, part in order:
        for j, key in enumerate(part.turn.keys):
            if asked.isdisjoint(key):
                rest.append((i, j))
            else:
                shared.append((-len(asked & key), -part.closeness, i, j))
    return [(i, j) for *_, i, j in sorted(shared)] + rest
