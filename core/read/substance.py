"""Small talk last, for a question that asks for a judgement.

"Would Ana enjoy a cooking class?" is weighed from what Ana said about herself, and its
query words find little: the hits after the first ones are often her "Thanks, that's
awesome!" as much as her "I bake bread every Sunday". Among the hits after the first WHOLE,
the quarter whose words are the most common among all the hits (mean inverse document
frequency over the hits' memories, speakers' names left out) moves to the end, each part in
its order. Only judging questions: on questions that gather facts, a short common reply
("Yes, twice!") can be the evidence, and moving small talk last cost them recall.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from ..types import MemoryHit
from .context import format_date
from .excerpt import WHOLE, judges
from .tokens import tokenize

SMALL_TALK = 0.25
"""Share of the later hits moved to the end: those with the most common words."""


def substance_first(hits: Sequence[MemoryHit], query: str,
                    stemmer: Callable | None = None) -> list[MemoryHit]:
    """`hits` with, for a judging question, the later hits' least informative quarter
    moved to the end (see the module's docstring); otherwise unchanged."""
    later = list(hits[WHOLE:])
    if not judges(query) or len(later) < 4:
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
    when = hit.memory.occurred_at
    return hit.text.removeprefix(f"[{format_date(when)}] ") if when else hit.text
