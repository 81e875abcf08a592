"""Other frameworks' embedding objects as the core's `Embedder`.

A LangChain `Embeddings` or a LlamaIndex `BaseEmbedding` is handed to the wrapper its adapter
package declares in `ADAPTER_GROUP` (see `adapters.py`); the wrappers only translate, and
`BatchEmbedder` does the rest the same way for every framework.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from numbers import Integral
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from .adapters import AdapterRegistry
from .embed import Embedder

ADAPTER_GROUP = "rmm_core.embedder_adapters"
"""Entry-point group of embedding adapters: each entry's name is a framework's top-level
package (`langchain_core`, `llama_index`), its value a `wrap(obj) -> Embedder` for that
framework's embedding objects."""

PROBE_TEXT = "What is the dimension of this embedding?"
"""Embedded once when a wrapped object does not state its dimension."""

_ADAPTERS: AdapterRegistry[Embedder] = AdapterRegistry(ADAPTER_GROUP)


def register_embedder_adapter(package: str, wrap: Callable[[Any], Embedder]) -> None:
    """Make `as_embedder` hand objects whose class comes from top-level `package` to `wrap`
    (what an entry point in `ADAPTER_GROUP` declares, for code not installed as one)."""
    _ADAPTERS.register(package, wrap)


def as_embedder(obj: Any) -> Embedder:
    """A framework's embedding object wrapped for the core (LangChain `Embeddings`,
    LlamaIndex `BaseEmbedding`, or any with a registered adapter); an `Embedder` as it is."""
    wrap = _ADAPTERS.find(obj)
    if wrap is not None:
        return wrap(obj)
    if callable(getattr(obj, "embed", None)) and isinstance(getattr(obj, "dim", None), Integral):
        return obj
    raise InvalidInputError(
        "embedder must be an Embedder (embed(texts) -> float32 array, and dim), a LangChain "
        f"Embeddings or a LlamaIndex BaseEmbedding; got {type(obj).__name__}")


def embedder_name(obj: Any, *model_attributes: str) -> str:
    """A stable name for a wrapped object: its class, with its model when the first of
    `model_attributes` it sets is a string naming one, e.g. `OllamaEmbeddings(bge-m3)`."""
    for attribute in model_attributes:
        model = getattr(obj, attribute, None)
        if isinstance(model, str) and model and model != "unknown":  # LlamaIndex's unset
            return f"{type(obj).__name__}({model})"
    return type(obj).__name__


class BatchEmbedder:
    """An `Embedder` over a framework's batch call (a list of texts to a list of vectors).

    Every text of a core call goes to the framework in one call (which batches further on
    its own terms), stored texts and queries alike: the core has one `embed` for both, so
    their vectors are always comparable. Rows come back as float32, L2-normalised like the
    packaged models' (a dot product is their cosine), of `dim` dimensions: the stated one
    when it is a positive integer, else that of `PROBE_TEXT`, embedded once here.

    Calls run one at a time, as the packaged models' do: the memory embeds from its
    background worker while it searches, and some models (a local HuggingFace tokenizer)
    fail when called from two threads at once.
    """

    def __init__(self, embed_batch: Callable[[list[str]], Sequence[Sequence[float]]], *,
                 name: str, dim: Any = None, source: Any = None) -> None:
        self._embed_batch = embed_batch
        self.name = name
        self.source = source
        """The wrapped framework object."""
        self._lock = threading.Lock()
        stated = isinstance(dim, Integral) and not isinstance(dim, bool) and dim > 0
        self.probe: np.ndarray | None = None
        """This embedder's vector of `PROBE_TEXT`, when embedded to learn the dimension."""
        if stated:
            self.dim = int(dim)
        else:
            self.probe = _unit(self._vectors([PROBE_TEXT]))[0]
            self.dim = len(self.probe)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:  # some services refuse an empty batch
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._vectors(list(texts))
        if vectors.shape[1] != self.dim:
            raise InvalidInputError(
                f"the embedder {self.name} made vectors of {vectors.shape[1]} dimensions, "
                f"not its {self.dim}")
        return _unit(vectors)

    def _vectors(self, texts: list[str]) -> np.ndarray:
        """The framework's vectors for `texts` as a float32 matrix, one row per text."""
        with self._lock:
            answer = self._embed_batch(texts)
        try:
            vectors = np.asarray(answer, dtype=np.float32)
        except (TypeError, ValueError):  # ragged rows, or not numbers
            vectors = np.zeros(0, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(texts) or vectors.shape[1] == 0:
            raise InvalidInputError(
                f"the embedder {self.name} answered {len(texts)} texts with "
                f"{type(answer).__name__} of shape {vectors.shape}, not one vector per text")
        if not np.isfinite(vectors).all():
            raise InvalidInputError(f"the embedder {self.name} made vectors that are not finite")
        return vectors


def _unit(vectors: np.ndarray) -> np.ndarray:
    """Rows L2-normalised (zero rows left as they are), as contiguous float32."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)
