"""The speed benches' synthetic bank: clustered random texts and vectors written straight
into a store, and a per-call timer (shared by `rmm bench speed` and its PostgreSQL part)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..memory import ReflectiveMemory
from ..models.embed import Embedder
from ..storage.base import NewMemory
from ..types import Memory, new_memory_id

WORDS = ("alice bob carol dave painting hiking guitar piano camping budget mortgage garden "
          "recipe marathon concert museum vacation lake beach dog cat puppy kitten school "
          "teacher nurse engineer startup promotion interview wedding birthday anniversary "
          "charity shelter volunteer adoption novel poetry pottery sunrise sunset mountain "
          "river city festival parade baseball soccer basketball yoga meditation therapy "
          "friendship family cousin grandmother neighbour january march june october 2022 "
          "2023 weekend morning evening coffee tea bakery cookies pasta sushi").split()


def synthetic_bank(n: int, embedder: Embedder, *, turns: int = 2, seed: int = 0,
                   word_vecs: np.ndarray | None = None) -> tuple[list[str], np.ndarray]:
    """Random 12-word texts and their vectors, shape (n, 1 + turns, dim).

    A text's vector is the mean of its words' embeddings plus noise, and each turn vector
    that of a third of its words, so that the bank has the clustered structure real
    memories have (an approximate index behaves differently on uniform noise).
    """
    rng = np.random.default_rng(seed)
    words = np.asarray(WORDS)
    picks = rng.integers(0, len(words), size=(n, 12))
    texts = [" ".join(row) for row in words[picks]]
    if word_vecs is None:
        word_vecs = embedder.embed(list(words))
    parts = [picks] + [picks[:, 4 * (t % 3): 4 * (t % 3) + 4] for t in range(turns)]
    vectors = np.stack([word_vecs[p].mean(axis=1) for p in parts], axis=1)
    vectors += 0.05 * rng.standard_normal(vectors.shape).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
    return texts, vectors.astype(np.float32)


def fill(mem: ReflectiveMemory, user_id: str, texts: list[str], vectors: np.ndarray,
         chunk: int = 20_000) -> None:
    """Write the bank straight into the store, `chunk` memories a transaction."""
    for start in range(0, len(texts), chunk):
        mem.store.add_memories(user_id, [
            NewMemory(Memory(id=new_memory_id(), user_id=user_id, text=t, key=t, refs=[]), v)
            for t, v in zip(texts[start:start + chunk], vectors[start:start + chunk])],
            source="bench")


def timed(call: Callable[[Any], Any], items: Any) -> list[float]:
    """Milliseconds of `call` on each item, in order."""
    out = []
    for item in items:
        t0 = time.perf_counter()
        call(item)
        out.append(1000 * (time.perf_counter() - t0))
    return out
