"""Units sized by words: long turns become sentence passages, segments are cut to a budget.

A memory that holds more words than a context can spare is useless, and the embedder reads
only its first 256 word pieces; so every LLM-free unit is kept under a word budget.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from ..types import Turn

_BREAK = re.compile(r"((?<=[.!?;:])\s+|\s*\n\s*)")
"""Where a passage may end: after sentence punctuation or at a line break."""


def words(turn: Turn) -> int:
    """Words of the turn as a context line (`speaker: text`)."""
    return len(turn.render().split())


def passages(turn: Turn, max_words: int) -> list[Turn]:
    """The turn as it is when it fits `max_words`, else as consecutive passages of whole
    sentences (a sentence longer than the budget is cut between words) of about equal
    size, each a `Turn` with the turn's id, speaker and timestamp."""
    if words(turn) <= max_words:
        return [turn]
    return [replace(turn, text=text)
            for text in split_text(turn.text, max(1, max_words - len(turn.speaker.split()) - 1))]


def split_text(text: str, max_words: int) -> list[str]:
    """`text` as it is when it has at most `max_words` words, else as consecutive pieces of
    whole sentences of about equal size, none over `max_words` (a longer sentence is cut
    between words)."""
    total = len(text.split())
    if total <= max_words:
        return [text]
    target = math.ceil(total / math.ceil(total / max_words))
    return _pack(_sentences(text, max_words), target, max_words)


def fit_units(split: list[list[Turn]], segments: list[list[int]], max_words: int
              ) -> list[list[int]]:
    """Units as positions in the flattened pieces of `split` (each turn's `passages`): each
    segment of turn positions cut into consecutive runs whose lines fit `max_words`.

    A passage of a long turn is a unit of its own: a speaker's short message stays apart
    from the other side's long answer (RMM keeps speakers apart).
    """
    start = [0]
    for parts in split:
        start.append(start[-1] + len(parts))
    units: list[list[int]] = []
    for segment in segments:
        current: list[int] = []
        size = 0
        for t in segment:
            if len(split[t]) > 1:
                units += [current] if current else []
                units += [[p] for p in range(start[t], start[t + 1])]
                current, size = [], 0
                continue
            n = words(split[t][0])
            if current and size + n > max_words:
                units.append(current)
                current, size = [], 0
            current.append(start[t])
            size += n
        if current:
            units.append(current)
    return units


def _sentences(text: str, budget: int) -> list[tuple[str, int]]:
    """Each sentence with the whitespace after it, and its words; none longer than `budget`
    words (a longer one is cut between words)."""
    parts = _BREAK.split(text)
    out = []
    for sentence, gap in zip(parts[::2], [*parts[1::2], ""]):
        tokens = sentence.split()
        if len(tokens) <= budget:
            out += [(sentence + gap, len(tokens))] if tokens else []
            continue
        chunks = [tokens[i:i + budget] for i in range(0, len(tokens), budget)]
        out += [(" ".join(c) + " ", len(c)) for c in chunks[:-1]]
        out.append((" ".join(chunks[-1]) + gap, len(chunks[-1])))
    return out


def _pack(sentences: list[tuple[str, int]], target: int, budget: int) -> list[str]:
    """Consecutive sentences joined into passages: one closes once it reaches `target`
    words, or when the next sentence would take it past `budget`."""
    parts: list[tuple[str, int]] = [("", 0)]
    for text, n in sentences:
        size = parts[-1][1]
        if size and (size >= target or size + n > budget):
            parts.append(("", 0))
        parts[-1] = (parts[-1][0] + text, parts[-1][1] + n)
    return [text.strip() for text, n in parts if n]
