"""BM25 over a bank that changes: term counts kept per document and scored at query time
with the live corpus statistics, so that adding or dropping documents costs only those
documents, and every score is the one bm25s gives after indexing the bank afresh (its
default Lucene variant and parameters, float32 scores). bm25s itself bakes the corpus
statistics into its matrix when it indexes, so it cannot take a document without a rebuild.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .signals import distinct_groups

K1, B = 1.5, 0.75
"""bm25s's defaults."""


def grown(buf: np.ndarray, used: int, new: np.ndarray) -> np.ndarray:
    """`buf` with `new` written after its first `used` rows: in place when it has room (the
    rows before `used` are untouched, so views of them stay valid), else in a copy with
    room to spare."""
    end = used + len(new)
    if end > len(buf):
        bigger = np.empty((max(end + end // 4, 64), *buf.shape[1:]), dtype=buf.dtype)
        bigger[:used] = buf[:used]
        buf = bigger
    buf[used:end] = new
    return buf


@dataclass(frozen=True, slots=True)
class _Postings:
    """Postings of some documents grouped by token: token t's are [ptr[t], ptr[t + 1])."""

    ptr: np.ndarray
    slots: np.ndarray
    tf: np.ndarray

    def postings(self, token: int) -> tuple[np.ndarray, np.ndarray]:
        """Token `token`'s postings: the slots holding it and its count in each."""
        if token + 1 >= len(self.ptr):
            return self.slots[:0], self.tf[:0]
        a, b = self.ptr[token], self.ptr[token + 1]
        return self.slots[a:b], self.tf[a:b]

    @property
    def nbytes(self) -> int:
        return self.ptr.nbytes + self.slots.nbytes + self.tf.nbytes


class _Docs:
    """The documents of one chain of snapshots, append-only: each holds a prefix, and only
    the newest (the chain's head) appends."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.tokens = np.zeros(0, dtype=np.int32)     # unique token ids of each document
        self.tf = np.zeros(0, dtype=np.float32)       # and how often each occurs in it
        self.offsets = np.zeros(1, dtype=np.int64)    # document s: [offsets[s], offsets[s+1])
        self.lengths = np.zeros(0, dtype=np.float64)  # tokens per document
        self.head: Lexicon | None = None
        self.lock = threading.Lock()

    def append(self, docs: list[list[str]], slots: int, postings: int) -> np.ndarray:
        """Add documents after the first `slots` (holding `postings`); their token ids."""
        tokens, tf, counts = [], [], []
        for doc in docs:
            c = Counter(self.vocab.setdefault(t, len(self.vocab)) for t in doc)
            tokens += c.keys()
            tf += c.values()
            counts.append(len(c))
        new_tokens = np.asarray(tokens, dtype=np.int32)
        self.tokens = grown(self.tokens, postings, new_tokens)
        self.tf = grown(self.tf, postings, np.asarray(tf, dtype=np.float32))
        self.offsets = grown(self.offsets, slots + 1,
                             postings + np.cumsum(np.asarray(counts, dtype=np.int64)))
        self.lengths = grown(self.lengths, slots,
                             np.asarray([len(d) for d in docs], dtype=np.float64))
        return new_tokens

    @property
    def nbytes(self) -> int:
        vocab = sum(len(t) + 90 for t in self.vocab)  # key, int and dict slot, roughly
        return (self.tokens.nbytes + self.tf.nbytes + self.offsets.nbytes
                + self.lengths.nbytes + vocab)


class Lexicon:
    """A snapshot of the bank's BM25: documents in slots, with its own live set and document
    frequencies. Postings of the slots below `merged` are grouped by token once; those of
    later slots form a small delta, grouped again at each change and merged in when it
    passes an eighth of the rest. `extend` makes the next snapshot, cheaply."""

    def __init__(self, docs: _Docs, n_slots: int, alive: np.ndarray, df: np.ndarray,
                 main: _Postings, merged: int) -> None:
        self._docs = docs
        self.n_slots = n_slots
        self._alive = alive
        self._df = df
        self.n_docs = int(alive.sum())
        lengths = docs.lengths[:n_slots]
        self.total_length = float(lengths[alive].sum())
        self._main, self._merged = main, merged
        self._delta = _grouped(docs, alive, merged, n_slots) if merged < n_slots else None

    @classmethod
    def build(cls, docs: list[list[str]]) -> Lexicon:
        """A lexicon of tokenised documents, in slots 0..len(docs)-1."""
        store = _Docs()
        tokens = store.append(docs, 0, 0)
        df = np.bincount(tokens, minlength=len(store.vocab)).astype(np.int64)
        alive = np.ones(len(docs), dtype=bool)
        lexicon = cls(store, len(docs), alive, df, _grouped(store, alive, 0, len(docs)),
                      len(docs))
        store.head = lexicon
        return lexicon

    def extend(self, docs: list[list[str]], dropped: np.ndarray) -> Lexicon | None:
        """The next snapshot: `docs` in new slots after this one's, the `dropped` slots gone;
        None when this snapshot is not the newest of its chain."""
        store = self._docs
        with store.lock:
            if store.head is not self:
                return None
            postings = int(store.offsets[self.n_slots])
            tokens = store.append(docs, self.n_slots, postings)
            n_slots = self.n_slots + len(docs)
            alive = np.concatenate([self._alive, np.ones(len(docs), dtype=bool)])
            df = np.zeros(len(store.vocab), dtype=np.int64)
            df[:len(self._df)] = self._df
            np.add.at(df, tokens, 1)
            dropped = dropped[alive[dropped]]
            for slot in dropped:
                np.subtract.at(df, store.tokens[store.offsets[slot]:store.offsets[slot + 1]], 1)
            alive[dropped] = False
            main, merged = self._main, self._merged
            if n_slots - merged > max(64, merged // 8):
                main, merged = _grouped(store, alive, 0, n_slots), n_slots
            nxt = Lexicon(store, n_slots, alive, df, main, merged)
            store.head = nxt
            return nxt

    def scores(self, query: list[str]) -> np.ndarray:
        """The BM25 score of every slot for the query tokens (0 for dropped slots); a token
        given twice counts twice, as in bm25s."""
        out = np.zeros(self.n_slots, dtype=np.float32)
        slots, values = self.hits(query)
        out[slots] = values
        return out

    def hits(self, query: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The slots that hold a query token (ascending) and their BM25 scores, the values
        `scores` gives there, at the cost of the query tokens' postings alone (no pass over
        every slot: a large bank's search needs no more)."""
        parts = list(self._contributions(query))
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        held, group = distinct_groups(np.concatenate([slots for slots, _ in parts]))
        out = np.zeros(len(held), dtype=np.float32)
        start = 0
        for slots, values in parts:  # token by token, as a sum over every slot would add
            out[group[start:start + len(slots)]] += values
            start += len(slots)
        return held, out

    def _contributions(self, query: list[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Per query token and postings part: the live slots holding it and its float32
        share of their score."""
        if not self.n_docs:
            return
        mean = np.float64(self.total_length) / self.n_docs
        lengths = self._docs.lengths
        for token in query:
            tid = self._docs.vocab.get(token)
            if tid is None or tid >= len(self._df) or not self._df[tid]:
                continue
            df = int(self._df[tid])
            idf = np.float64(np.float32(math.log(1 + (self.n_docs - df + 0.5) / (df + 0.5))))
            for part in (self._main, self._delta):
                if part is None:
                    continue
                slots, tf = part.postings(tid)
                if self.n_docs < self.n_slots:  # some slots dropped
                    live = self._alive[slots]
                    slots, tf = slots[live], tf[live]
                tf = tf.astype(np.float64)
                tfc = tf / (K1 * ((1 - B) + B * lengths[slots] / mean) + tf)
                if len(slots):
                    yield slots, (idf * tfc).astype(np.float32)

    def frequencies(self) -> Mapping[str, int]:
        """How many live documents hold each token."""
        return _Frequencies(self._docs.vocab, self._df)

    @property
    def nbytes(self) -> int:
        delta = self._delta.nbytes if self._delta is not None else 0
        return (self._docs.nbytes + self._main.nbytes + delta + self._alive.nbytes
                + self._df.nbytes)


def _grouped(docs: _Docs, alive: np.ndarray, lo: int, hi: int) -> _Postings:
    """The postings of the live documents in slots [lo, hi), grouped by token."""
    a, b = docs.offsets[lo], docs.offsets[hi]
    owner = np.repeat(np.arange(lo, hi), np.diff(docs.offsets[lo:hi + 1]))
    keep = alive[owner]
    tokens, tf, owner = docs.tokens[a:b][keep], docs.tf[a:b][keep], owner[keep]
    order = np.argsort(tokens, kind="stable")
    ptr = np.zeros(len(docs.vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(tokens, minlength=len(docs.vocab)), out=ptr[1:])
    return _Postings(ptr, owner[order], tf[order])


class _Frequencies(Mapping):
    """Document frequencies by token, read from a lexicon snapshot (0 for unknown tokens)."""

    def __init__(self, vocab: dict[str, int], df: np.ndarray) -> None:
        self._vocab, self._df = vocab, df

    def __getitem__(self, token: str) -> int:
        tid = self._vocab.get(token)
        return int(self._df[tid]) if tid is not None and tid < len(self._df) else 0

    def __iter__(self) -> Iterator[str]:
        return (t for t, i in list(self._vocab.items()) if i < len(self._df) and self._df[i])

    def __len__(self) -> int:
        return int(np.count_nonzero(self._df))


@dataclass(frozen=True, slots=True)
class Corpus:
    """What BM25 knows of a corpus: documents, their mean length in tokens, and how many
    documents hold each token (bm25s keeps no such figures for texts it did not index)."""

    n: int
    mean_length: float
    freqs: Mapping[str, int]

    @classmethod
    def of(cls, docs: list[list[str]] | list[Counter]) -> Corpus:
        freqs = Counter(token for doc in docs for token in set(doc))
        lengths = [d.total() if isinstance(d, Counter) else len(d) for d in docs]
        return cls(len(docs), sum(lengths) / max(len(docs), 1), freqs)

    def scores(self, query: list[str], docs: list[Counter], k1: float = 1.5,
               b: float = 0.75) -> np.ndarray:
        """BM25 (the Lucene variant, bm25s's default and parameters) of texts outside the
        corpus (each as its token counts), as if they were in it: the corpus's document
        frequencies and mean length."""
        out = np.zeros(len(docs), dtype=np.float32)
        length = max(self.mean_length, 1.0)
        idf = {t: math.log(1 + (self.n - self.freqs[t] + 0.5) / (self.freqs[t] + 0.5))
               for t in set(query)}
        for i, counts in enumerate(docs):
            norm = k1 * (1 - b + b * counts.total() / length)
            out[i] = sum(w * counts[t] / (counts[t] + norm) for t, w in idf.items()
                         if t in counts)
        return out


def quiet_bm25s() -> None:
    """Undo bm25s's `setLevel(DEBUG)` on its own logger at import, so that it follows the
    application's logging configuration like every other library's."""
    logger = logging.getLogger("bm25s")
    if logger.level == logging.DEBUG:
        logger.setLevel(logging.NOTSET)


def bm25_index(corpus: list[list[str]]) -> Any:
    """A bm25s index of tokenised texts, or None when no text has a term (bm25s needs one)."""
    if not any(corpus):
        return None
    import bm25s

    quiet_bm25s()
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    return index
