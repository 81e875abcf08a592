"""Segmentation: split a session into topically coherent runs of turns (SeCom)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

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
