"""The feature reranker (`reranker="features"`): the hand-set fused score (z-scored over the K
candidates) plus w . phi.

phi holds 15 signals the retriever already has or a memory carries (its cosines, word,
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
from datetime import datetime, timezone
from functools import cache, lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError, StorageError
from ..types import Memory, MemoryHit
from .rerank_policy import Ranking, logit_gradient, select, zscore

FEATURES = (
    "dense",  # cosine of the query and the memory's own vector, z
    "turn",  # best cosine of the query and the memory's turn vectors, z
    "overlap",  # share of the query's content words the memory holds
    "bigram",  # share of the query's pairs of neighbouring content words the memory holds
    "names",  # share of the query's capitalised names the memory holds
    "speaker",  # share of the query's capitalised names among the memory's speakers
    "numbers",  # the memory holds a number of the query
    "when_date",  # the query asks when and the memory speaks of a time
    "date",  # the memory speaks of a time
    "date_match",  # the query names a month or year and the memory happened then
    "assistant",  # only the assistant's words
    "provisional",  # a turn not reflected yet
    "words",  # log of the memory's words, z
    "recency",  # its date's rank among the candidates', 0 (oldest) .. 1 (newest)
    "session",  # how much of the candidates' fused score its session holds, z
)
"""The features, in the order of the weights."""

PER_ITEM = ("overlap", "bigram", "names", "numbers", "when_date", "date")
"""Features of one text alone (no other candidate, no retrieval signal needed)."""

COSINE_SPREAD = 0.1
"""Typical spread of the query's cosines over 20 candidates: puts a lone item's cosine on
the z scale of the learned weights (`FeatureScorer.item_scores`)."""

SHIPPED = Path(str(files("rmm_core") / "data" / "rerank_features.json"))
"""The pre-trained weights packaged with the library (`rmm bench rerank --save-weights`)."""

_STOP = frozenset(
    "a an the and or but of to in on at for with from by about as is are was were be been "
    "being am do does did done have has had having i me my mine you your yours he him his she "
    "her hers it its we us our they them their this that these those what when where who whom "
    "whose which why how would could should will shall can may might must not no yes so than "
    "then there here if into out up down over any some all each much many kind type ever "
    "likely".split())
"""Words that say nothing of a topic: bm25s's English list (33 words) plus pronouns, modal
verbs and the question words, which would otherwise count as overlap."""
_WORD = re.compile(r"\w+")
_NAME = re.compile(r"\b[A-Z][\w'-]+")
_ASKS_WHEN = re.compile(
    r"\bwhen\b|\bhow long\b|\bwhat (?:date|day|year|month|time)\b|\bwhich (?:date|day|year|"
    r"month|week)\b|\bhow (?:many|much) (?:days|weeks|months|years)\b", re.IGNORECASE)
_MONTHS = ("january february march april may june july august september october november "
           "december").split()
_TIME = frozenset(
    "yesterday today tomorrow tonight ago last next recently weekend morning evening january "
    "february march april may june july august september october november december jan feb "
    "mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday "
    "saturday sunday week month year years months weeks days".split())
_PREFIX = 5
"""Words are compared by their first letters (a stemmer's poor cousin, at no cost)."""


@dataclass(frozen=True, slots=True)
class TextTraits:
    """What the features read of a text: its content-word stems and pairs of neighbouring
    ones, its numbers, whether it speaks of a time (a date word, a year, a day of the month)
    and its word count."""

    stems: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    numbers: frozenset[str]
    dated: bool
    words: int


@lru_cache(maxsize=4096)
def text_traits(text: str) -> TextTraits:
    """A text's traits, cached: the same memories come back search after search."""
    words = _WORD.findall(text.lower())
    content = [w[:_PREFIX] for w in words if w not in _STOP]
    numbers = frozenset(w for w in words if w.isdigit())
    dated = not _TIME.isdisjoint(words) or any(
        (len(n) == 4 and n[:2] in ("19", "20")) for n in numbers) or any(
        w[-2:] in ("st", "nd", "rd", "th") and w[:-2].isdigit() for w in words)
    return TextTraits(frozenset(content), frozenset(zip(content, content[1:])), numbers, dated,
                      len(words))


@dataclass(frozen=True, slots=True)
class QueryTraits:
    """What the features need of a query, read once per search."""

    text: TextTraits
    names: frozenset[str]
    asks_when: bool
    months: frozenset[int]
    years: frozenset[int]

    @classmethod
    def of(cls, query: str) -> QueryTraits:
        names = {n.lower()[:_PREFIX] for n in _NAME.findall(query) if n.lower() not in _STOP}
        text = text_traits(query)
        lower = set(_WORD.findall(query.lower()))
        return cls(text, frozenset(names), bool(_ASKS_WHEN.search(query)),
                   frozenset(i + 1 for i, m in enumerate(_MONTHS) if m in lower),
                   frozenset(int(n) for n in text.numbers if len(n) == 4 and n[:2] in ("19",
                                                                                      "20")))

    def per_item(self, text: str) -> list[float]:
        """The PER_ITEM features of one text."""
        item, query = text_traits(text), self.text
        return [_share(query.stems, item.stems), _share(query.pairs, item.pairs),
                _share(self.names, item.stems), float(not query.numbers.isdisjoint(item.numbers)),
                float(item.dated and self.asks_when), float(item.dated)]

    def date_match(self, when: datetime | None) -> float:
        """1.0 when the query names a month or a year and `when` falls in it."""
        if when is None or not (self.months or self.years):
            return 0.0
        return float((not self.months or when.month in self.months)
                     and (not self.years or when.year in self.years))


def _share(wanted: frozenset, found: frozenset) -> float:
    return len(wanted & found) / len(wanted) if wanted else 0.0


_COLUMN = {name: i for i, name in enumerate(FEATURES)}


def features(query: str, query_vec: np.ndarray, hits: Sequence[MemoryHit],
             vectors: Sequence[np.ndarray], fused: np.ndarray,
             assistant_only: Callable[[list[str]], bool]) -> np.ndarray:
    """phi of each candidate, (K, len(FEATURES)) float32: `hits` carry the memories,
    `vectors` their rows as indexed (own vector first, then its turns')."""
    traits = QueryTraits.of(query)
    memories = [h.memory for h in hits]
    out = np.zeros((len(hits), len(FEATURES)), np.float32)

    def put(names: Sequence[str], values: Any) -> None:
        out[:, [_COLUMN[n] for n in names]] = values

    dense = np.array([v[0] @ query_vec if len(v) else 0.0 for v in vectors], np.float32)
    turn = np.array([(v[1:] @ query_vec).max() if len(v) > 1 else d
                     for v, d in zip(vectors, dense)], np.float32)
    words = np.log1p([text_traits(m.text).words for m in memories])
    put(("dense", "turn", "words", "session"), zscore(np.stack(
        [dense, turn, words, _session_mass(memories, zscore(fused))], axis=1)))
    put(PER_ITEM, [traits.per_item(m.text) for m in memories])
    put(("speaker", "date_match", "assistant", "provisional", "recency"), np.stack([
        [_share(traits.names, frozenset(s.lower()[:_PREFIX] for s in m.speakers))
         for m in memories],
        [traits.date_match(m.occurred_at) for m in memories],
        [assistant_only(m.speakers) for m in memories],
        [bool(m.attrs.get("provisional")) for m in memories],
        _recency([m.occurred_at for m in memories])], axis=1))
    return out


def _session_mass(memories: Sequence[Memory], z: np.ndarray) -> np.ndarray:
    """Per candidate: the positive fused z-scores of the candidates from its session (its
    own included): a topic talked over at length in one session."""
    sessions = [m.session_ids[0] if m.session_ids else m.id for m in memories]
    mass: dict[str, float] = {}
    for session, value in zip(sessions, z):
        mass[session] = mass.get(session, 0.0) + max(float(value), 0.0)
    return np.array([mass[s] for s in sessions], np.float32)


def _recency(dates: list[datetime | None]) -> np.ndarray:
    """Each date's rank among the known ones, scaled 0..1; 0.5 where unknown or all equal.
    Dates without a zone (a caller's `started_at`) count as UTC, like the stored ones."""
    stamps = [None if d is None else (d if d.tzinfo else d.replace(tzinfo=timezone.utc))
              for d in dates]
    known = sorted({d for d in stamps if d is not None})
    if len(known) < 2:
        return np.full(len(dates), 0.5, np.float32)
    rank = {d: i / (len(known) - 1) for i, d in enumerate(known)}
    return np.array([rank[d] if d is not None else 0.5 for d in stamps], np.float32)


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

    def __init__(self, *, temperature: float = 0.5, rng: np.random.Generator | None = None,
                 assistant_only: Callable[[list[str]], bool] = lambda speakers: False) -> None:
        self.temperature = temperature
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
        phi^T dL/dlogits / T.

        The baseline is the mean reward of this result's picks: with RMM's constant 0.5 and
        most picks uncited, every step pushes down whatever was picked, and the weights learn
        to sharpen or flatten the exploration instead of which memories get cited (measured,
        README). A result with all picks cited, or none, teaches nothing."""
        logits = self.scores(weights, ranking.features, ranking.fused) / self.temperature
        d_logits = logit_gradient(logits, ranking.order[: ranking.kept], rewards,
                                  float(np.mean(rewards)) if len(rewards) else 0.0)
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
