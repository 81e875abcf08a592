"""Which embedder built a store: recorded with its first vectors, checked at every open (and
at the first write of an open made before any), so that a store built with one model refuses
another of the same dimension."""

from __future__ import annotations

import numpy as np

from ..errors import EmbedderMismatchError
from ..storage.base import EmbedderRecord, Store
from .embed import Embedder, check_dimension
from .embed_adapters import PROBE_TEXT

SAME_MODEL = 0.99
"""Cosine of two embedders' probe vectors above which they are one model (the packaged
MiniLM on onnxruntime, OpenVINO or torch agrees at 0.999; two models' spaces do not align)."""


def check_embedder(store: Store, embedder: Embedder) -> None:
    """Refuse an embedder whose vectors cannot be compared with those `store` holds: of
    another dimension (`check_dimension`), or another model than the one recorded with the
    store's first vectors (`EmbedderMismatchError`). The model is told by its vector of
    `PROBE_TEXT`, not its name alone: two local models can share a folder name, and a
    framework's wrapper names the same model otherwise. A store that holds vectors but no
    record (made before this check) records this one; an empty one records it with its
    first vectors, so that an open which writes nothing pins no model."""
    check_dimension(store.vector_dim(), embedder)
    name = str(getattr(embedder, "name", type(embedder).__name__))
    recorded = store.embedder()
    if recorded is None:
        if store.read_only:
            return
        record = EmbedderRecord(name, _probe(embedder))
        if store.vector_dim() is None:
            store.expect_embedder(record, lambda first: _check_same(first, name, record.probe))
            return
        recorded = store.record_embedder(record)
    if recorded is not None:
        _check_same(recorded, name, _probe(embedder) if recorded.probe is not None else None)


def same_model(recorded: EmbedderRecord, name: str, probe: np.ndarray | None) -> bool:
    """Whether the embedder `name` (its `probe` vector, if known) is the model `recorded`:
    by the probe vectors where both are known, else by the name."""
    if probe is None or recorded.probe is None:
        return recorded.name == name
    return _same(recorded.probe, probe)


def _check_same(recorded: EmbedderRecord, name: str, probe: np.ndarray | None) -> None:
    """Refuse the embedder `name` (its `probe` vector, if known) unless it is the model
    `recorded` (`same_model`)."""
    if same_model(recorded, name, probe):
        return
    same_name = " (another model under the same name)" if recorded.name == name else ""
    raise EmbedderMismatchError(
        f"this memory was built with the embedder {recorded.name} but is opened with the "
        f"embedder {name}{same_name}, whose vectors differ: open it with the embedder (or "
        "embedding.model) it was built with; to move to the new model, open a new store "
        "with it and add the memories again, which embeds them anew")


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
