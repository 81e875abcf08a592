"""Which embedder built a store: recorded at its first open, checked at every open after, so
that a store built with one model refuses another of the same dimension."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ..storage.base import EmbedderRecord, Store
from .embed import Embedder, check_dimension
from .embed_adapters import PROBE_TEXT

SAME_MODEL = 0.99
"""Cosine of two embedders' probe vectors above which they are one model (the packaged
MiniLM on onnxruntime, OpenVINO or torch agrees at 0.999; two models' spaces do not align)."""


def check_embedder(store: Store, embedder: Embedder) -> None:
    """Refuse an embedder whose vectors cannot be compared with those `store` holds: of
    another dimension (`check_dimension`), or another model than the one recorded at the
    store's first open; one under another name whose vector of `PROBE_TEXT` is the
    recorded one's (a framework's wrapper of the same model) is the same model. A store
    that recorded none (made before this check, or new) records this one."""
    check_dimension(store.vector_dim(), embedder)
    name = str(getattr(embedder, "name", type(embedder).__name__))
    recorded = store.embedder()
    if recorded is None:
        if store.read_only:
            return
        recorded = store.record_embedder(EmbedderRecord(name, _probe(embedder)))
    if recorded is None or recorded.name == name:
        return
    probe = _probe(embedder)
    if recorded.probe is not None and probe is not None and _same(recorded.probe, probe):
        return
    raise InvalidInputError(
        f"this memory was built with the embedder {recorded.name} but is opened with the "
        f"embedder {name}, whose vectors differ: open it with the embedder (or "
        "embedding.model) it was built with")


def _probe(embedder: Embedder) -> np.ndarray | None:
    """The embedder's vector of `PROBE_TEXT` (the one it embedded to learn its dimension, if
    it did: no second call); None when embedding fails, which surfaces when the memory
    embeds, as before this check."""
    probe = getattr(embedder, "probe", None)
    if probe is None:
        try:
            probe = embedder.embed([PROBE_TEXT])[0]
        except Exception:  # noqa: BLE001 - a broken or unreachable model fails at its use
            return None
    return np.asarray(probe, dtype=np.float32)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return norms > 0 and float(a @ b) / norms >= SAME_MODEL
