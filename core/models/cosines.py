"""A model's cosines on the packaged MiniLM's scale, where the library's similarity
thresholds were set: an embedder may declare its `CosineScale` (`cosine_scale`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class CosineScale:
    """A model's cosines mapped onto the packaged MiniLM's, where the library's similarity
    thresholds were set (a hit's score, `min_score`, the merge and link thresholds, SCM's
    gate): slope and offset of a query's cosine to a stored text, and of two stored texts'
    (a query prefix moves the first). The identity for the MiniLM and any embedder that
    declares none (`cosine_scale`)."""

    query: tuple[float, float] = (1.0, 0.0)
    text: tuple[float, float] = (1.0, 0.0)

    def of_query(self, cosines: Any) -> Any:
        """Query-to-text cosines on the MiniLM's scale, within [-1, 1]."""
        return _mapped(cosines, self.query)

    def of_texts(self, cosines: Any) -> Any:
        """Text-to-text cosines on the MiniLM's scale, within [-1, 1]."""
        return _mapped(cosines, self.text)


def _mapped(cosines: Any, line: tuple[float, float]) -> Any:
    if line == (1.0, 0.0):
        return cosines
    out = np.clip(np.asarray(cosines, dtype=np.float64) * line[0] + line[1], -1.0, 1.0)
    return float(out) if np.ndim(out) == 0 else out


IDENTITY = CosineScale()


def cosine_scale(embedder: Any) -> CosineScale:
    """The embedder's `CosineScale` (its `cosine_scale` attribute), else the identity."""
    scale = getattr(embedder, "cosine_scale", None)
    return scale if isinstance(scale, CosineScale) else IDENTITY
