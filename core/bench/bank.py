"""The speed benches' synthetic bank: clustered texts and vectors drawn from a vocabulary
and written straight into a store chunk by chunk, a per-call timer and RSS (shared by
`rmm bench speed` and its PostgreSQL part)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from ..memory import ReflectiveMemory
from ..models.embed import Embedder
from ..storage.base import NewMemory
from ..text import STOP_WORDS
from ..types import Memory, new_memory_id

WORDS = ("alice bob carol dave painting hiking guitar piano camping budget mortgage garden "
          "recipe marathon concert museum vacation lake beach dog cat puppy kitten school "
          "teacher nurse engineer startup promotion interview wedding birthday anniversary "
          "charity shelter volunteer adoption novel poetry pottery sunrise sunset mountain "
          "river city festival parade baseball soccer basketball yoga meditation therapy "
          "friendship family cousin grandmother neighbour january march june october 2022 "
          "2023 weekend morning evening coffee tea bakery cookies pasta sushi").split()
"""The small vocabulary of earlier benches: every word in about a sixth of all memories."""

VOCAB_SIZE = 8000
ZIPF_EXPONENT = 1.1
TEXT_WORDS = 12
QUERY_WORDS = 6


@dataclass(frozen=True)
class Vocabulary:
    """Words, their unit embeddings and the probability each is drawn with."""

    words: np.ndarray
    vectors: np.ndarray
    weights: np.ndarray

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Word numbers of the given shape, drawn by weight."""
        return rng.choice(len(self.words), size=shape, p=self.weights)

    def texts(self, picks: np.ndarray) -> list[str]:
        """One space-joined text per row of word numbers."""
        return [" ".join(row) for row in self.words[picks]]

    def queries(self, n: int, seed: int = 1, size: int = QUERY_WORDS) -> list[str]:
        """`n` query texts drawn the way memories are."""
        return self.texts(self.draw(np.random.default_rng(seed), (n, size)))


def tokenizer_words(size: int = VOCAB_SIZE) -> tuple[list[str], np.ndarray]:
    """The packaged MiniLM tokenizer's first `size` whole English words (alphabetic, three
    letters or more, no stop words) and each one's rank among all its whole words, stop words
    included (the tokenizer lists words roughly by frequency)."""
    from bm25s.stopwords import STOPWORDS_EN

    data = json.loads((files("rmm_core") / "data" / "minilm_tokenizer.json").read_text())
    ranked = [w for w, _ in sorted(data["model"]["vocab"].items(), key=lambda item: item[1])
              if w.isascii() and w.isalpha()]
    stop = STOP_WORDS | set(STOPWORDS_EN)
    kept = [(w, rank) for rank, w in enumerate(ranked, 1) if len(w) >= 3 and w not in stop]
    words, ranks = zip(*kept[:size])
    return list(words), np.asarray(ranks, dtype=np.float64)


def zipf_vocabulary(embedder: Embedder, size: int = VOCAB_SIZE) -> Vocabulary:
    """Several thousand real words drawn Zipf-like (rank^-1.1, ranked among all words so that
    dropping stop words leaves the head real content words have), so posting lists have a
    real store's long tail."""
    words, ranks = tokenizer_words(size)
    weights = ranks ** -ZIPF_EXPONENT
    return Vocabulary(np.asarray(words), embedder.embed(words), weights / weights.sum())


def small_vocabulary(embedder: Embedder) -> Vocabulary:
    """The 73 words of earlier benches, drawn uniformly (each in ~1/6 of all memories)."""
    return Vocabulary(np.asarray(WORDS), embedder.embed(WORDS),
                      np.full(len(WORDS), 1 / len(WORDS)))


VOCABULARIES: dict[str, Callable[[Embedder], Vocabulary]] = {
    "zipf": zipf_vocabulary, "small": small_vocabulary}


def bank_chunks(n: int, vocab: Vocabulary, *, turns: int = 2, seed: int = 0,
                chunk: int = 10_000) -> Iterator[tuple[list[str], np.ndarray]]:
    """`n` random 12-word texts and their vectors (shape (m, 1 + turns, dim)), `chunk` at a
    time, so that a large bank never exists whole.

    A text's vector is the mean of its words' embeddings plus noise, and each turn vector
    that of a third of its words, so that the bank has the clustered structure real
    memories have (an approximate index behaves differently on uniform noise).
    """
    rng = np.random.default_rng(seed)
    third = TEXT_WORDS // 3
    for start in range(0, n, chunk):
        picks = vocab.draw(rng, (min(chunk, n - start), TEXT_WORDS))
        parts = [picks] + [picks[:, third * (t % 3): third * (t % 3) + third]
                           for t in range(turns)]
        vectors = np.stack([_mean_vector(vocab.vectors, p) for p in parts], axis=1)
        vectors += 0.05 * rng.standard_normal(vectors.shape, dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
        yield vocab.texts(picks), vectors


def _mean_vector(word_vecs: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """Mean embedding of each row's words, one column at a time (no (m, words, dim) copy)."""
    total = word_vecs[picks[:, 0]].copy()
    for j in range(1, picks.shape[1]):
        total += word_vecs[picks[:, j]]
    return total / picks.shape[1]


def synthetic_bank(n: int, embedder: Embedder, *, turns: int = 2, seed: int = 0,
                   vocab: Vocabulary | None = None) -> tuple[list[str], np.ndarray]:
    """A whole (small) bank at once: `bank_chunks` joined; the Zipf vocabulary by default."""
    vocab = vocab or zipf_vocabulary(embedder)
    texts: list[str] = []
    vectors = []
    for chunk_texts, chunk_vectors in bank_chunks(n, vocab, turns=turns, seed=seed):
        texts += chunk_texts
        vectors.append(chunk_vectors)
    dim = vocab.vectors.shape[1]
    return texts, (np.concatenate(vectors) if vectors
                   else np.zeros((0, 1 + turns, dim), np.float32))


def fill(mem: ReflectiveMemory, user_id: str, texts: list[str], vectors: np.ndarray,
         chunk: int = 20_000) -> None:
    """Write a bank held whole straight into the store, `chunk` memories a transaction."""
    fill_chunks(mem, user_id, ((texts[start:start + chunk], vectors[start:start + chunk])
                               for start in range(0, len(texts), chunk)))


def fill_chunks(mem: ReflectiveMemory, user_id: str,
                chunks: Iterator[tuple[list[str], np.ndarray]]) -> int:
    """Write each (texts, vectors) chunk straight into the store in one transaction; returns
    the number of memories written."""
    written = 0
    for texts, vectors in chunks:
        mem.store.add_memories(user_id, [
            NewMemory(Memory(id=new_memory_id(), user_id=user_id, text=t, key=t, refs=[]), v)
            for t, v in zip(texts, vectors)], source="bench")
        written += len(texts)
    return written


def timed(call: Callable[[Any], Any], items: Any) -> list[float]:
    """Milliseconds of `call` on each item, in order."""
    out = []
    for item in items:
        t0 = time.perf_counter()
        call(item)
        out.append(1000 * (time.perf_counter() - t0))
    return out


def rss_mb() -> tuple[float, float]:
    """This process's resident memory now and at its peak, in MiB (Linux)."""
    status = Path("/proc/self/status").read_text()
    values = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return (int(values["VmRSS"].split()[0]) / 1024, int(values["VmHWM"].split()[0]) / 1024)
