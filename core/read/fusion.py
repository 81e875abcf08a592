"""How a search's signals combine into one ranking: the weights, the scale each signal is
z-scored on, and the fused score of a pool of candidates.

Fusion (measured on the LoCoMo dev conversations, see README): each signal is z-normalised
over the user's memories, then summed with weights — BM25 over the stemmed key, cosine to
the memory's own vector, and the best cosine among its turns' vectors. A memory's score then
borrows a little from its neighbours in the same session, since a topic often spills over a
segment boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """How the signals combine; the defaults are the measured best (README, benchmarks)."""

    lexical: float = 1.0
    dense: float = 1.0
    turn: float = 0.5
    smoothing: float = 0.25
    assistant: float = 1.0
    """Subtracted from memories that only `fusion.assistant_speakers` wrote."""
    assistant_speakers: frozenset[str] = frozenset({"assistant"})
    """Speaker names (case-folded) of the assistant side of a chat."""

    def by_assistant(self, speakers: list[str]) -> bool:
        """Whether text of these speakers is the assistant's alone (gets the `assistant`
        penalty)."""
        return bool(speakers) and all(s.casefold() in self.assistant_speakers for s in speakers)


@dataclass(frozen=True, slots=True)
class Scale:
    """Mean and spread of each signal over the bank, as one search z-scored them: items
    scored outside the index (provisional turns) are put on the same scale with it."""

    lexical: tuple[float, float] | None
    """None: the items' own (their lexical score is not on the bank's scale)."""
    unit: tuple[float, float]
    turn: tuple[float, float]
    fused: float | None = None
    """Spread of the fused scores (None: that of the items fused)."""

    @classmethod
    def of(cls, lexical: np.ndarray, unit: np.ndarray, turn: np.ndarray | None = None
           ) -> Scale:
        """The scale of the signals given (a sample of the bank, or items with no bank to
        compare with: their own); `turn` None: the unit signal is the turn signal too."""
        return cls(stats(lexical), stats(unit), stats(unit if turn is None else turn))

    def cheap(self, weights: FusionWeights, lexical: np.ndarray, unit: np.ndarray
              ) -> np.ndarray:
        """The lexical and dense part of the fused score: what a shortlist is cut by before
        turns and neighbours are scored."""
        return (weights.lexical * scaled(lexical, self.lexical or stats(lexical))
                + weights.dense * scaled(unit, self.unit))

    def fuse(self, weights: FusionWeights, lexical: np.ndarray, unit: np.ndarray,
             turn: np.ndarray, assistant: np.ndarray,
             links: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
             ) -> tuple[np.ndarray, float]:
        """The fused scores of a pool of items and the spread the assistant prior used:
        signals z-scored on this scale, each item's same-session neighbours smoothed in when
        `links` = (sorted pool positions, previous and next position of each, -1 for none)
        is given, items only the assistant wrote lowered by `assistant` spreads."""
        fused = self.cheap(weights, lexical, unit) + weights.turn * scaled(turn, self.turn)
        if links is not None and weights.smoothing:
            fused = smooth(fused, *links, weights.smoothing)
        spread = self.fused if self.fused is not None else stats(fused)[1]
        return fused - weights.assistant * spread * assistant, spread


@dataclass(slots=True)
class Candidates:
    """Scored candidates: positions into the index's ids, best first, and their scores."""

    positions: np.ndarray
    fused: np.ndarray
    scale: Scale | None = None


def stats(values: np.ndarray) -> tuple[float, float]:
    """Mean and spread for z-scores (spread 1 when the values are all equal)."""
    return float(values.mean()), float(values.std()) or 1.0


def scaled(values: np.ndarray, stats: tuple[float, float]) -> np.ndarray:
    return (values - stats[0]) / stats[1]


def smooth(scores: np.ndarray, pool: np.ndarray, prev: np.ndarray, nxt: np.ndarray,
            weight: float) -> np.ndarray:
    """scores[j] + weight * (score of j's previous + next memory); neighbours outside the
    (sorted) pool add 0."""
    def neighbour(of: np.ndarray) -> np.ndarray:
        at = np.minimum(np.searchsorted(pool, of), len(pool) - 1)
        return np.where((of >= 0) & (pool[at] == of), scores[at], 0.0)

    return scores + weight * (neighbour(prev[pool]) + neighbour(nxt[pool]))
