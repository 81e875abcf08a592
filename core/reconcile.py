"""Reconciliation: Add each new memory, or Merge it into a stored one (RMM)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .session import Draft
from .types import Memory


@dataclass(frozen=True, slots=True)
class Decision:
    """Add draft `draft` (target None) or merge it into memory `target` with `text`."""

    draft: int
    target: str | None = None
    text: str | None = None


@runtime_checkable
class Reconciler(Protocol):
    """Decides, for a batch of drafts, which are new and which update stored memories.

    `neighbours[i]` lists the stored memories most similar to draft i, with similarity.
    """

    def reconcile(self, drafts: Sequence[Draft],
                  neighbours: Sequence[Sequence[tuple[Memory, float]]]) -> list[Decision]: ...


class ThresholdReconciler:
    """Merge a draft into its nearest stored memory when they are near-duplicates.

    Raw-turn memories are only merged when almost the same (cosine >= `threshold`) and
    about the same speakers; the merged text keeps both texts, so nothing is paraphrased.
    """

    def __init__(self, threshold: float = 0.92) -> None:
        self.threshold = threshold

    def reconcile(self, drafts: Sequence[Draft],
                  neighbours: Sequence[Sequence[tuple[Memory, float]]]) -> list[Decision]:
        decisions: list[Decision] = []
        merged_text: dict[str, str] = {}
        for i, (draft, near) in enumerate(zip(drafts, neighbours)):
            best = next(((m, s) for m, s in near
                         if s >= self.threshold and set(m.speakers) & set(draft.speakers)), None)
            if best is None:
                decisions.append(Decision(i))
                continue
            memory = best[0]
            text = merged_text.get(memory.id, memory.text) + "\n" + draft.text
            merged_text[memory.id] = text
            decisions.append(Decision(i, memory.id, text))
        # a memory merged twice in one batch ends with the text of its last merge
        return [Decision(d.draft, d.target, merged_text[d.target]) if d.target else d
                for d in decisions]
