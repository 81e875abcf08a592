"""Segmentation: split a session into topically coherent runs of turns (SeCom)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..models import prompts
from ..models.llm import metered
from ..models.parse import ParseError, as_index, ask, load_json, parse_yes_no, with_fallback
from ..types import Turn
from .session import SessionInput


@runtime_checkable
class Segmenter(Protocol):
    """Returns segments as lists of turn positions: consecutive, covering every turn once."""

    def segment(self, session: SessionInput) -> list[list[int]]: ...


class EmbeddingSegmenter:
    """TextTiling over turn embeddings: cut where similarity dips deepest between neighbours.

    The gap score between turns i and i+1 compares the mean vector of the `window` turns
    before with the `window` turns after; a gap is a boundary when its depth (how far it
    lies below the peaks on both sides) exceeds mean + `cutoff` x std of all depths.
    `min_turns`/`max_turns` bound segment length.
    """

    def __init__(self, *, window: int = 2, cutoff: float = 0.0, min_turns: int = 2,
                 max_turns: int = 8) -> None:
        if not 1 <= min_turns <= max_turns:
            raise ValueError("need 1 <= min_turns <= max_turns")
        self.window, self.cutoff = window, cutoff
        self.min_turns, self.max_turns = min_turns, max_turns

    def segment(self, session: SessionInput) -> list[list[int]]:
        n = len(session.turns)
        if n <= self.min_turns or session.vectors is None:
            return _fixed(n, self.max_turns)
        depth = _depths(session.vectors, self.window)
        threshold = depth.mean() + self.cutoff * depth.std()
        cuts = [g + 1 for g in np.argsort(-depth) if depth[g] > threshold]
        return _apply_cuts(n, cuts, self.min_turns, self.max_turns, depth)


class FixedSegmenter:
    """Windows of `size` consecutive turns; the baseline SeCom compares against."""

    def __init__(self, size: int = 3) -> None:
        self.size = size

    def segment(self, session: SessionInput) -> list[list[int]]:
        return _fixed(len(session.turns), self.size)


def _fixed(n: int, size: int) -> list[list[int]]:
    return [list(range(s, min(s + size, n))) for s in range(0, n, size)]


def _depths(vectors: np.ndarray, window: int) -> np.ndarray:
    """Depth score of each gap between turn i and i+1 (len n-1)."""
    n = len(vectors)
    csum = np.vstack([np.zeros((1, vectors.shape[1]), dtype=np.float64),
                      np.cumsum(vectors, axis=0, dtype=np.float64)])
    gaps = np.empty(n - 1)
    for g in range(n - 1):
        lo, hi = max(0, g + 1 - window), min(n, g + 1 + window)
        left = csum[g + 1] - csum[lo]
        right = csum[hi] - csum[g + 1]
        denom = np.linalg.norm(left) * np.linalg.norm(right)
        gaps[g] = float(left @ right / denom) if denom else 0.0
    depth = np.empty_like(gaps)
    for g in range(len(gaps)):
        depth[g] = (gaps[: g + 1].max() - gaps[g]) + (gaps[g:].max() - gaps[g])
    return depth


def _apply_cuts(n: int, ranked_cuts: list[int], min_turns: int, max_turns: int,
                depth: np.ndarray) -> list[list[int]]:
    """Take cuts deepest first while segments stay >= min_turns; then split long ones."""
    chosen: list[int] = []
    for cut in ranked_cuts:
        edges = sorted([0, n, *chosen])
        pos = np.searchsorted(edges, cut)
        if cut - edges[pos - 1] >= min_turns and edges[pos] - cut >= min_turns:
            chosen.append(cut)
    edges = sorted([0, n, *chosen])
    segments: list[list[int]] = []
    for start, end in zip(edges, edges[1:]):
        segments += _split_long(start, end, max_turns, depth)
    return segments


def _split_long(start: int, end: int, max_turns: int, depth: np.ndarray) -> list[list[int]]:
    """Split [start, end) at its deepest inner gaps until every part fits `max_turns`."""
    if end - start <= max_turns:
        return [list(range(start, end))]
    lo, hi = start + 1, end - 1  # cut positions strictly inside
    inner = depth[lo - 1: hi]
    cut = lo + int(np.argmax(inner))
    return _split_long(start, cut, max_turns, depth) + _split_long(cut, end, max_turns, depth)


# LLM segmentation (SeCom) --------------------------------------------------------------------
class LLMSegmenter:
    """Zero-shot segmentation: one LLM call returns the session's segments as turn ranges.

    Falls back to `fallback` (TextTiling by default) when the LLM fails twice.
    """

    def __init__(self, llm: Any, fallback: Segmenter | None = None) -> None:
        self.llm = metered(llm)
        self.fallback = fallback or EmbeddingSegmenter()

    def segment(self, session: SessionInput) -> list[list[int]]:
        n = len(session.turns)
        if n <= 2:
            return [list(range(n))]
        prompt = prompts.SEGMENT.format(last=n - 1, mid=n // 2 - 1, after=n // 2,
                                        turns=prompts.numbered_turns(session.turns))
        return with_fallback("segmentation",
                             lambda: ask(self.llm, prompt, lambda a: parse_segments(a, n)),
                             lambda: self.fallback.segment(session))


class IncrementalLLMSegmenter:
    """SeCom's incremental form: per new turn, "does it continue the current segment?".

    `continues` is the streaming call (one LLM call per turn, made as turns arrive);
    `segment` replays it over a whole session, so it costs one call per turn after the first.
    """

    def __init__(self, llm: Any, fallback: Segmenter | None = None, *,
                 max_turns: int = 12) -> None:
        self.llm, self.max_turns = metered(llm), max_turns
        self.fallback = fallback or EmbeddingSegmenter()

    def continues(self, segment: list[Turn], turn: Turn) -> bool:
        """True when `turn` stays on the topic of `segment` (raises LLMError on failure)."""
        prompt = prompts.CONTINUES.format(segment="\n".join(t.render() for t in segment),
                                          turn=turn.render())
        return ask(self.llm, prompt, parse_yes_no)

    def segment(self, session: SessionInput) -> list[list[int]]:
        def run() -> list[list[int]]:
            segments = [[0]]
            for i in range(1, len(session.turns)):
                current = segments[-1]
                if len(current) < self.max_turns and self.continues(
                        [session.turns[p] for p in current], session.turns[i]):
                    current.append(i)
                else:
                    segments.append([i])
            return segments

        return with_fallback("segmentation", run,
                             lambda: self.fallback.segment(session))


def parse_segments(answer: str, n: int) -> list[list[int]]:
    """Segments from a JSON list of `{"start", "end"}` (or `[start, end]`) over n turns.

    Any index outside 0..n-1 is rejected; gaps and overlaps are resolved by cutting at
    every stated boundary, so the result always covers each turn exactly once.
    """
    value, _ = load_json(answer)
    if isinstance(value, dict):
        value = value.get("segments", [value])
    if not isinstance(value, list) or not value:
        raise ParseError("expected a non-empty JSON list of {\"start\": i, \"end\": j} objects")
    cuts: set[int] = set()
    for item in value:
        if isinstance(item, dict):
            start, end = as_index(item.get("start")), as_index(item.get("end"))
        elif isinstance(item, list) and len(item) == 2:
            start, end = as_index(item[0]), as_index(item[1])
        else:
            raise ParseError(f"each segment must be {{\"start\": i, \"end\": j}}, got {item!r:.80}")
        if start is None or end is None:
            raise ParseError(f"segment {item!r:.80} lacks integer start and end")
        if not (0 <= start <= end < n):
            raise ParseError(f"segment {start}-{end} is outside turns 0-{n - 1}")
        cuts.update({start, end + 1})
    edges = sorted(cuts | {0, n})
    return [list(range(a, b)) for a, b in zip(edges, edges[1:])]

