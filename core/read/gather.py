"""The order of the later hits for a question that gathers: breadth first, small talk last.

A question that asks for a list, a count, an order, a summary or a judgement is answered
from many turns (`excerpt.gathers`), so among the hits after the first WHOLE:

- a hit that carries a turn no earlier hit carries comes before one that only repeats
  turns already carried (another passage of a long message that is already a hit; a
  memory that names no turn is its own source);
- for a judgement ("Would Ana enjoy a cooking class?"), weighed from what the person said
  about themselves, the quarter of hits whose words are the most common among all the hits
  (mean inverse document frequency over the hits' memories, speakers' names left out: "Thanks,
  that's awesome!") goes last. Only judgements: on questions that gather facts, a short
  common reply ("Yes, twice!") can be the evidence, and moving small talk last cost them
  recall.

Each part keeps its order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from ..language.tokens import tokenize
from ..types import MemoryHit
from .context import date_head
from .excerpt import WHOLE, gathers, judges

SMALL_TALK = 0.25
"""Share of the later hits a judgement moves to the end: those with the most common words."""


def gathered(hits: Sequence[MemoryHit], query: str,
             stemmer: Callable | None = None) -> list[MemoryHit]:
    """`hits` in the order above for a question that gathers; otherwise unchanged."""
    if not gathers(query):
        return list(hits)
    hits = new_turns_first(hits)
    return substance_first(hits, stemmer) if judges(query) else hits


def gathered_upto(hits: Sequence[MemoryHit], cut: Callable[[int], list[MemoryHit]],
                  query: str, need: int | None, stemmer: Callable | None = None
                  ) -> tuple[list[MemoryHit], bool]:
    """The first `need` hits (None: all) of `gathered` of the hits cut (`cut(n)`: the first
    `n` of `hits` cut to what bears on the query), or all of them once all are cut, and
    whether they are all. The later hits that carry a new turn keep their order, so the
    first of them are known once the hits up to them are cut: a search that shows five cuts
    a few, not the whole window (a judgement weighs every hit: it cuts all). Each round
    cuts as many more hits as new ones are still missing."""
    lazy = need is not None and gathers(query) and not judges(query)
    end = min(len(hits), max(need, WHOLE)) if lazy else len(hits)
    while True:
        done = cut(end)
        if end == len(hits):
            return gathered(done, query, stemmer), True
        new, _ = _new_and_repeated(done)
        if WHOLE + len(new) >= need:
            return [*done[:WHOLE], *new][:need], False
        end = min(len(hits), end + need - WHOLE - len(new))


def new_turns_first(hits: Sequence[MemoryHit]) -> list[MemoryHit]:
    """The later hits that carry a turn no earlier hit carries, then the others."""
    return [*hits[:WHOLE], *(h for part in _new_and_repeated(hits) for h in part)]


def _new_and_repeated(hits: Sequence[MemoryHit]) -> tuple[list[MemoryHit], list[MemoryHit]]:
    """The later hits that carry a turn no earlier hit carries, and the others: whether a
    hit is new depends only on the hits before it."""
    seen = {r for h in hits[:WHOLE] for r in _sources(h)}
    new, repeats = [], []
    for hit in hits[WHOLE:]:
        (repeats if seen.issuperset(_sources(hit)) else new).append(hit)
        seen.update(_sources(hit))
    return new, repeats


def _sources(hit: MemoryHit) -> list[str]:
    """The turns a hit carries; a memory that names none (an `add`ed fact) is its own."""
    return list(hit.refs) or [f"memory:{hit.memory.id}"]


def substance_first(hits: Sequence[MemoryHit], stemmer: Callable | None = None
                    ) -> list[MemoryHit]:
    """The later hits with their least informative quarter moved to the end."""
    later = list(hits[WHOLE:])
    if len(later) < 4:
        return list(hits)
    names = {w.lower() for h in hits for s in h.memory.speakers for w in s.split()}
    documents = tokenize([h.memory.text for h in hits], stemmer, names)
    counts = Counter(t for words in documents for t in set(words))
    idf = {t: float(np.log(len(hits) / n)) for t, n in counts.items()}
    said = tokenize([_said(h) for h in later], stemmer, names)
    weight = [float(np.mean([idf.get(t, 0.0) for t in words] or [0.0])) for words in said]
    cut = float(np.quantile(weight, SMALL_TALK))
    return [*hits[:WHOLE], *(h for h, w in zip(later, weight) if w > cut),
            *(h for h, w in zip(later, weight) if w <= cut)]


def _said(hit: MemoryHit) -> str:
    """The hit's text without its date."""
    return hit.text.removeprefix(date_head(hit.memory))
