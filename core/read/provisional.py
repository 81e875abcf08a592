"""Immediate recall: turns not yet reflected are searchable at once, as provisional hits.

A provisional hit is a memory-shaped view of one logged turn (its best passage when the
turn is longer than a hit may be): id `turn:<turn id>`, `attrs["provisional"] = True`, refs
= that turn. It is scored on the bank's own scale (BM25 with the bank's document
frequencies, cosines z-scored with the bank's statistics), so it ranks among memories as the
same text would if it were one. Once its session is reflected, the turn is no longer open
and its memory is found instead. Each passage is embedded and tokenised once (cached).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..language.tokens import tokenize
from ..language.units import passages
from ..lru import ByteLRU
from ..models.embed import Embedder
from ..storage.base import Store
from ..types import Memory, Turn
from .index import QUESTION_WORDS, Corpus, FusionWeights, Scale

PREFIX = "turn:"
"""What a provisional hit's memory id starts with."""


@dataclass(frozen=True, slots=True)
class Provisional:
    """A provisional candidate: its memory view, fused score and vector rows."""

    memory: Memory
    score: float
    vectors: np.ndarray


@dataclass(frozen=True, slots=True)
class _Piece:
    turn: Turn
    vector: np.ndarray
    tokens: Counter


class OpenTurns:
    """Scores a user's unreflected turns for a query; their passages' vectors and BM25
    tokens are kept in a bounded cache, so a turn is embedded once, not at every search."""

    def __init__(self, store: Store, embedder: Embedder, *, unit_words: int,
                 stemmer: Callable | None, cache_bytes: int = 32 * 2**20) -> None:
        self.store, self.embedder, self.unit_words, self.stemmer = (store, embedder,
                                                                    unit_words, stemmer)
        self._cache: ByteLRU[list[_Piece]] = ByteLRU(cache_bytes)

    def open(self, user_id: str) -> list[tuple[Turn, dict[str, Any]]]:
        """The user's unreflected turns with their sessions' metadata."""
        return self.store.open_turns(user_id)

    def score(self, user_id: str, turns: list[tuple[Turn, dict[str, Any]]], query: str,
              query_vec: np.ndarray, weights: FusionWeights, scale: Scale | None,
              corpus: Corpus | None, top: int) -> list[Provisional]:
        """The `top` turns by their best passage, fused as a memory would be on the bank's
        `scale` and `corpus`; with no bank (None), on the open turns' own. A passage said
        again word for word (a repeated question) is one hit."""
        if not turns:
            return []
        pieces = self._pieces(user_id, [t for t, _ in turns])
        flat = [p for ps in pieces for p in ps]
        counts = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        docs = [p.tokens for p in flat]
        dense = np.stack([p.vector for p in flat]) @ query_vec
        query_tokens = tokenize([query], self.stemmer, QUESTION_WORDS)[0]
        lexical = (corpus or Corpus.of(docs)).scores(query_tokens, docs)
        assistant = np.repeat([weights.by_assistant([t.speaker]) for t, _ in turns],
                              counts).astype(np.float32)
        fused = (scale or Scale.of(lexical, dense)).fuse(weights, lexical, dense, dense,
                                                         assistant)[0]
        starts = np.cumsum(counts) - counts
        best_score = np.maximum.reduceat(fused, starts)
        out: list[Provisional] = []
        seen: set[str] = set()
        for i in np.argsort(-best_score, kind="stable"):
            best = starts[i] + int(np.argmax(fused[starts[i]:starts[i] + counts[i]]))
            (turn, metadata), piece = turns[i], flat[best].turn
            said = " ".join(piece.render().casefold().split())
            if said in seen:
                continue
            seen.add(said)
            memory = Memory(id=PREFIX + turn.id, user_id=user_id, text=piece.render(),
                            key=piece.text, refs=[turn.id], speakers=[turn.speaker],
                            session_ids=[turn.session_id], occurred_at=turn.timestamp,
                            attrs={"provisional": True}, metadata=dict(metadata))
            out.append(Provisional(memory, float(best_score[i]), flat[best].vector[None, :]))
            if len(out) == top:
                break
        return out

    def _pieces(self, user_id: str, turns: list[Turn]) -> list[list[_Piece]]:
        keys = [_key(user_id, t) for t in turns]
        found = [self._cache.get(k) for k in keys]
        missing = [i for i, f in enumerate(found) if f is None]
        if missing:
            split = [passages(turns[i], self.unit_words) for i in missing]
            flat = [p for ps in split for p in ps]
            vectors = iter(self.embedder.embed([p.render() for p in flat]))
            tokens = iter(tokenize([p.text for p in flat], self.stemmer))
            for i, parts in zip(missing, split):
                found[i] = [_Piece(p, next(vectors), Counter(next(tokens))) for p in parts]
                size = sum(p.vector.nbytes + 64 * len(p.tokens) for p in found[i]) + 200
                self._cache.put(keys[i], found[i], size)
        return found  # type: ignore[return-value]


def _key(user_id: str, turn: Turn) -> str:
    """The cache key of a turn: a digest of who said what (a turn id may be reused after
    a `forget`)."""
    raw = "\x00".join((user_id, turn.id or "", turn.speaker, turn.text))
    return hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()

