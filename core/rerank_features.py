"""The feature reranker (`reranker="features"`): the hand-set fused score plus w . phi.

phi holds a dozen signals the retriever already has or a memory carries (its cosines, word,
name and number overlap with the question, dates for "when" questions, speaker, length,
recency), each standardised so that one learning rate fits them all. w = 0 is exactly the
hand-set fusion; w is small enough to learn from a few hundred citations and, unlike a map
over embedding dimensions, says nothing about one conversation's content, so it transfers.
"""

from __future__ import annotations

import json
import re
import struct
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

from .errors import InvalidInputError, StorageError
from .rerank_policy import Ranking, logit_gradient, select, zscore
from .types import MemoryHit

FEATURES = (
    "fused",  # the hand-set fused score, z over the K candidates (w scales its confidence)
    "dense",  # cosine of the query and the memory's own vector, z
    "turn",  # best cosine of the query and the memory's turn vectors, z
    "overlap",  # share of the query's content words the memory holds
    "names",  # share of the query's capitalised names the memory holds
    "numbers",  # the memory holds a number of the query
    "when_date",  # the query asks when and the memory speaks of a time
    "date",  # the memory speaks of a time
    "assistant",  # only the assistant's words
    "provisional",  # a turn not reflected yet
    "words",  # log of the memory's words, z
    "recency",  # its date's rank among the candidates', 0 (oldest) .. 1 (newest)
)
"""The features, in the order of the weights."""

PER_ITEM = ("overlap", "names", "numbers", "when_date", "date")
"""Features of one text alone (no other candidate, no retrieval signal needed)."""

COSINE_SPREAD = 0.1
"""Typical spread of the query's cosines over 20 candidates: puts a lone item's cosine on
the z scale of the learned weights (`FeatureScorer.item_scores`)."""

SHIPPED = Path(__file__).parent / "data" / "rerank_features.json"
"""The pre-trained weights packaged with the library (`rmm bench rerank --save-weights`)."""

_STOP = frozenset(
    "a an the and or but of to in on at for with from by about as is are was were be been "
    "being am do does did done have has had having i me my mine you your yours he him his she "
    "her hers it its we us our they them their this that these those what when where who whom "
    "whose which why how would could should will shall can may might must not no yes so than "
    "then there here if into out up down over any some all each much many kind type ever "
    "likely".split())
_WORD = re.compile(r"\w+")
_NAME = re.compile(r"\b[A-Z][\w'-]+")
_ASKS_WHEN = re.compile(
    r"\bwhen\b|\bhow long\b|\bwhat (?:date|day|year|month|time)\b|\bwhich (?:date|day|year|"
    r"month|week)\b|\bhow (?:many|much) (?:days|weeks|months|years)\b", re.IGNORECASE)
_TIME = frozenset(
    "yesterday today tomorrow tonight ago last next recently weekend morning evening january "
    "february march april may june july august september october november december jan feb "
    "mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday "
    "saturday sunday week month year years months weeks days".split())
_PREFIX = 5
"""Words are compared by their first letters (a stemmer's poor cousin, at no cost)."""


def _stems(words: Sequence[str]) -> set[str]:
    return {w[:_PREFIX] for w in words if w not in _STOP}


@lru_cache(maxsize=4096)
def text_traits(text: str) -> tuple[frozenset[str], frozenset[str], bool, int]:
    """A text's word stems, its numbers, whether it speaks of a time (a date word, a year,
    a day of the month) and its word count; cached, as the same memories come back search
    after search."""
    words = _WORD.findall(text.lower())
    numbers = frozenset(w for w in words if w.isdigit())
    dated = not _TIME.isdisjoint(words) or any(
        (len(n) == 4 and n[:2] in ("19", "20")) for n in numbers) or any(
        w[-2:] in ("st", "nd", "rd", "th") and w[:-2].isdigit() for w in words)
    return frozenset(_stems(words)), numbers, dated, len(words)


@dataclass(frozen=True, slots=True)
class QueryTraits:
    """What the features need of a query, read once per search."""

    words: frozenset[str]
    names: frozenset[str]
    numbers: frozenset[str]
    asks_when: bool

    @classmethod
    def of(cls, query: str) -> QueryTraits:
        names = {n.lower()[:_PREFIX] for n in _NAME.findall(query) if n.lower() not in _STOP}
        stems, numbers, _, _ = text_traits(query)
        return cls(stems, frozenset(names), numbers, bool(_ASKS_WHEN.search(query)))

    def per_item(self, text: str) -> list[float]:
        """The PER_ITEM features of one text."""
        stems, numbers, dated, _ = text_traits(text)
        return [len(self.words & stems) / len(self.words) if self.words else 0.0,
                len(self.names & stems) / len(self.names) if self.names else 0.0,
                float(not self.numbers.isdisjoint(numbers)), float(dated and self.asks_when),
                float(dated)]


def features(query: str, query_vec: np.ndarray, hits: Sequence[MemoryHit],
             vectors: Sequence[np.ndarray], fused: np.ndarray,
             assistant_only: Callable[[list[str]], bool]) -> np.ndarray:
    """phi of each candidate, (K, len(FEATURES)) float32: `hits` carry the memories,
    `vectors` their rows as indexed (own vector first, then its turns')."""
    traits = QueryTraits.of(query)
    k = len(hits)
    out = np.zeros((k, len(FEATURES)), np.float32)
    dense = np.stack([v[0] for v in vectors]) @ query_vec
    turn = np.array([(v[1:] @ query_vec).max() if len(v) > 1 else d
                     for v, d in zip(vectors, dense)], np.float32)
    words = np.log1p([text_traits(h.memory.text)[3] for h in hits])
    out[:, [0, 1, 2, 10]] = zscore(np.stack([fused, dense, turn, words], axis=1))
    out[:, 3:8] = [traits.per_item(h.memory.text) for h in hits]
    out[:, 8] = [assistant_only(h.memory.speakers) for h in hits]
    out[:, 9] = [bool(h.memory.attrs.get("provisional")) for h in hits]
    out[:, 11] = _recency([h.memory.occurred_at for h in hits])
    return out


def _recency(dates: list) -> np.ndarray:
    """Each date's rank among the known ones, scaled 0..1; 0.5 where unknown or all equal."""
    known = sorted({d for d in dates if d is not None})
    if len(known) < 2:
        return np.full(len(dates), 0.5, np.float32)
    rank = {d: i / (len(known) - 1) for i, d in enumerate(known)}
    return np.array([rank[d] if d is not None else 0.5 for d in dates], np.float32)


_MAGIC, _STEP_MAGIC = b"RMMF", b"RMMG"
_HEADER = struct.Struct("<4sqq")  # magic, features, steps (base) or examples (step)


@dataclass(slots=True)
class FeatureWeights:
    """w, one weight per feature (zero = the hand-set fusion), and the steps that trained it."""

    w: np.ndarray  # (F,) float32
    steps: int = 0

    @classmethod
    def zeros(cls, dim: int = len(FEATURES)) -> FeatureWeights:
        return cls(np.zeros(dim, np.float32))

    @property
    def dim(self) -> int:
        return int(self.w.shape[0])

    @property
    def nbytes(self) -> int:
        return self.w.nbytes

    def is_finite(self) -> bool:
        return bool(np.isfinite(self.w).all())

    def to_bytes(self) -> bytes:
        return _HEADER.pack(_MAGIC, self.dim, self.steps) + self.w.astype(np.float32).tobytes()

    @classmethod
    def from_bytes(cls, blob: bytes) -> FeatureWeights:
        dim, steps = _unpack(blob, _MAGIC, "stored feature-reranker weights")
        return cls(np.frombuffer(blob, np.float32, offset=_HEADER.size).copy(), steps)

    def named(self) -> dict[str, float]:
        return {name: float(v) for name, v in zip(FEATURES, self.w)}


def _unpack(blob: bytes, magic: bytes, what: str) -> tuple[int, int]:
    try:
        head, dim, count = _HEADER.unpack(blob[:_HEADER.size])
    except struct.error as exc:
        raise StorageError(f"{what} are unreadable: {exc}") from exc
    if head != magic or dim <= 0 or len(blob) != _HEADER.size + 4 * dim:
        raise StorageError(f"{what} are unreadable: bad header or length")
    return dim, count


def load_weights(path: str | Path | None = None) -> FeatureWeights:
    """Feature weights from a JSON file (the shipped one when `path` is None): it must name
    exactly FEATURES, in order, with finite weights."""
    try:
        text = Path(path if path is not None else SHIPPED).read_text()
        data = json.loads(text)
        names, values = data["features"], data["weights"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"cannot read reranker weights {path or SHIPPED}: {exc}") from exc
    if list(names) != list(FEATURES) or len(values) != len(FEATURES):
        raise InvalidInputError(f"reranker weights {path or SHIPPED} name features {names}, "
                                f"this version has {list(FEATURES)}")
    w = np.asarray(values, np.float32)
    if not np.isfinite(w).all():
        raise InvalidInputError(f"reranker weights {path or SHIPPED} are not finite")
    return FeatureWeights(w, int(data.get("steps", 0)))


@cache
def shipped_weights() -> FeatureWeights:
    """The packaged weights, read once (shared, never changed in place)."""
    return load_weights()


def save_weights(weights: FeatureWeights, path: str | Path, about: dict) -> None:
    """Write weights in `load_weights`'s format, with `about` (how they were trained)."""
    Path(path).write_text(json.dumps({**about, "features": list(FEATURES),
                                      "weights": [round(float(v), 6) for v in weights.w],
                                      "steps": weights.steps}, indent=1) + "\n")


class FeatureScorer:
    """Scores, selects and computes REINFORCE gradients over phi; holds settings, never
    weights. `rng` draws the exploration noise."""

    def __init__(self, *, temperature: float = 0.5, baseline: float = 0.5,
                 rng: np.random.Generator | None = None,
                 assistant_only: Callable[[list[str]], bool] = lambda speakers: False) -> None:
        self.temperature = temperature
        self.baseline = baseline
        self.rng = rng if rng is not None else np.random.default_rng()
        self.assistant_only = assistant_only

    @staticmethod
    def scores(weights: FeatureWeights, phi: np.ndarray, fused: np.ndarray) -> np.ndarray:
        """z(fused) + phi . w for each candidate."""
        return zscore(fused) + phi @ weights.w

    def rank(self, weights: FeatureWeights, query: str, query_vec: np.ndarray,
             hits: Sequence[MemoryHit], vectors: Sequence[np.ndarray], keep: int, *,
             explore: bool = False) -> Ranking:
        """Order the candidates and keep `keep`; with `explore`, Gumbel-top-k sampling."""
        fused = np.array([h.score for h in hits], np.float32)
        phi = features(query, np.asarray(query_vec, np.float32), hits, vectors, fused,
                       self.assistant_only)
        scores = self.scores(weights, phi, fused)
        order = select(scores, keep, self.temperature, self.rng, explore)
        return Ranking(fused, order, min(keep, len(hits)), scores, features=phi)

    def gradient(self, weights: FeatureWeights, ranking: Ranking,
                 rewards: Sequence[float]) -> np.ndarray:
        """dL/dw of the REINFORCE loss: the logits are (z(fused) + phi . w) / T, so it is
        phi^T dL/dlogits / T."""
        logits = self.scores(weights, ranking.features, ranking.fused) / self.temperature
        d_logits = logit_gradient(logits, ranking.order[: ranking.kept], rewards,
                                  self.baseline)
        return (ranking.features.T @ d_logits / np.float32(self.temperature)).astype(np.float32)

    @staticmethod
    def item_scores(weights: FeatureWeights, query: str, query_vec: np.ndarray,
                    texts: Sequence[str], vectors: Sequence[np.ndarray]) -> list[float]:
        """Scores of arbitrary items, each on its own (no retrieval signals, no other
        candidate): best-row cosine / COSINE_SPREAD + the PER_ITEM part of phi . w."""
        traits = QueryTraits.of(query)
        at = [FEATURES.index(n) for n in PER_ITEM]
        return [float((v @ query_vec).max() / COSINE_SPREAD
                      + np.dot(traits.per_item(t), weights.w[at]))
                for t, v in zip(texts, vectors)]


class FeatureModel:
    """How the store keeps feature weights: a small blob plus logged steps (F floats each);
    new scopes start from `start` (the shipped weights by default)."""

    kind = "reranker-features"

    def __init__(self, start: FeatureWeights | None = None) -> None:
        self.start = start if start is not None else FeatureWeights.zeros()

    def initial(self, dim: int) -> FeatureWeights:
        return self.start

    def decode(self, blob: bytes) -> FeatureWeights:
        return FeatureWeights.from_bytes(blob)

    def encode(self, weights: FeatureWeights) -> bytes:
        return weights.to_bytes()

    def encode_step(self, grads: np.ndarray, count: int, rate: float) -> bytes:
        step = (-rate * grads).astype(np.float32)
        return _HEADER.pack(_STEP_MAGIC, len(step), count) + step.tobytes()

    def apply(self, weights: FeatureWeights, blobs: Sequence[bytes],
              name: str) -> FeatureWeights:
        """The weights with logged steps added; a step that is not finite is left out."""
        w, steps, bad = weights.w.copy(), weights.steps, 0
        for blob in blobs:
            dim, count = _unpack(blob, _STEP_MAGIC, "a logged feature-reranker step")
            step = np.frombuffer(blob, np.float32, offset=_HEADER.size)
            if dim != len(w) or not np.isfinite(step).all():
                bad += 1
                continue
            w += step
            steps += count
        if bad:
            warnings.warn(f"{bad} logged step(s) of reranker weights {name!r} are not finite "
                          "or of another size and are ignored", RuntimeWarning, stacklevel=3)
        return FeatureWeights(w, steps)

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    def nbytes(self, grads: np.ndarray) -> int:
        return grads.nbytes

    def dim_of(self, grads: np.ndarray) -> int:
        return len(grads)

    def reach(self, weights: FeatureWeights | None, grads: np.ndarray, rate: float) -> float:
        current = float(np.abs(weights.w).max()) if weights is not None else 0.0
        return current + rate * float(np.abs(grads).max())  # NaN stays NaN
