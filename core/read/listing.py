"""The live memories of an index snapshot in bank order, and how a change reorders them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class Listing:
    """Per live memory, in bank order: its id, metadata, slot and session code."""

    ids: list[str]
    metadata: list[dict[str, Any]]
    slot: np.ndarray
    codes: np.ndarray

    def changed(self, position: np.ndarray, old: np.ndarray, gone: np.ndarray,
                ids: list[str], metadata: list[dict[str, Any]], slots: np.ndarray,
                codes: np.ndarray) -> Listing:
        """The listing after a change of memories `ids` (with their `metadata`, new `slots`
        and session `codes`): those whose `old` slot is live replaced in place, the others
        (old slot -1) appended; the memories at the `gone` slots dropped. `position` maps
        this listing's slots to positions."""
        fresh = old < 0
        slot, all_codes, kept_ids, kept_meta = self.slot.copy(), self.codes.copy(), \
            self.ids, self.metadata
        at = position[old[~fresh]]  # replaced in place
        slot[at] = slots[~fresh]
        all_codes[at] = codes[~fresh]
        if len(at):
            kept_meta = list(kept_meta)
            for p, m in zip(at, (m for m, f in zip(metadata, fresh) if not f)):
                kept_meta[p] = m
        if len(gone):
            keep = np.ones(len(slot), dtype=bool)
            keep[position[gone]] = False
            slot, all_codes = slot[keep], all_codes[keep]
            kept_ids = [m for m, k in zip(kept_ids, keep) if k]
            kept_meta = [m for m, k in zip(kept_meta, keep) if k]
        return Listing(kept_ids + [m for m, f in zip(ids, fresh) if f],
                       kept_meta + [m for m, f in zip(metadata, fresh) if f],
                       np.concatenate([slot, slots[fresh]]),
                       np.concatenate([all_codes, codes[fresh]]))
