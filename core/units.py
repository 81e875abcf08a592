"""Units sized by words: long turns become sentence passages, segments are cut to a budget.

A memory that holds more words than a context can spare is useless, and the embedder reads
only its first 256 word pieces; so every LLM-free unit is kept under a word budget.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import replace

from .types import Turn

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\s*\n\s*")
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
    budget = max(1, max_words - len(turn.speaker.split()) - 1)
    total = len(turn.text.split())
    target = math.ceil(total / math.ceil(total / budget))
    return [replace(turn, text=text)
            for text in _pack(_sentences(turn.text, budget), target, budget)]


def to_pieces(segments: list[list[int]], pieces: list[list[Turn]]) -> list[list[int]]:
    """Segments of turn positions as segments of positions in the flattened pieces."""
    start = [0]
    for parts in pieces:
        start.append(start[-1] + len(parts))
    return [[p for t in segment for p in range(start[t], start[t + 1])] for segment in segments]


def _sentences(text: str, budget: int) -> list[list[str]]:
    """Sentences as word lists, none longer than `budget` words."""
    out = []
    for sentence in _SENTENCE_END.split(text):
        tokens = sentence.split()
        out += [tokens[i:i + budget] for i in range(0, len(tokens), budget)]
    return out


def _pack(sentences: list[list[str]], target: int, budget: int) -> list[str]:
    """Consecutive sentences joined into passages: one closes once it reaches `target`
    words, or when the next sentence would take it past `budget`."""
    parts: list[list[str]] = [[]]
    for sentence in sentences:
        if parts[-1] and (len(parts[-1]) >= target or len(parts[-1]) + len(sentence) > budget):
            parts.append([])
        parts[-1] += sentence
    return [" ".join(p) for p in parts if p]


def fit(turns: list[Turn], segments: list[list[int]], max_words: int) -> list[list[int]]:
    """Cut each segment into consecutive runs whose lines fit `max_words` together.

    Passages of a long turn never share a unit with other turns: a speaker's short
    message stays apart from the other side's long answer (RMM keeps speakers apart).
    """
    ids = [t.id for t in turns]
    split = {i for i, n in Counter(ids).items() if n > 1}
    units: list[list[int]] = []
    for segment in segments:
        current: list[int] = []
        size = 0
        for pos in segment:
            n = words(turns[pos])
            alone = current and ids[pos] != ids[current[-1]] and (
                ids[pos] in split or ids[current[-1]] in split)
            if current and (alone or size + n > max_words):
                units.append(current)
                current, size = [], 0
            current.append(pos)
            size += n
        if current:
            units.append(current)
    return units

