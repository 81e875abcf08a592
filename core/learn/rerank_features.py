"""The feature reranker (`reranker.kind="features"`): the hand-set fused score (z-scored over the K
candidates) plus w . phi.

phi holds 15 signals the retriever already has or a memory carries (its cosines, word,
name and number overlap with the question, dates for "when" questions, speaker, length,
recency), each standardised so that one learning rate fits them all. w = 0 is exactly the
hand-set fusion; w is small enough to learn from a few hundred citations and, unlike a map
over embedding dimensions, says nothing about one conversation's content, so it transfers.
"""

from __future__ import annotations

import json
import struct
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError, StorageError
from ..types import Memory, MemoryHit
from .rerank_policy import Ranking, logit_gradient, select, zscore
from .rerank_traits import QueryTraits, memory_traits, share, text_traits

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

_COLUMN = {name: i for i, name in enumerate(FEATURES)}
_AT = {group: [_COLUMN[n] for n in names] for group, names in {
    "z": ("dense", "turn", "words", "session"), "item": PER_ITEM,
    "memory": ("speaker", "date_match", "assistant", "provisional")}.items()}


def features(query: str, query_vec: np.ndarray, hits: Sequence[MemoryHit],
             vectors: Sequence[np.ndarray], fused: np.ndarray,
             assistant_only: Callable[[list[str]], bool]) -> np.ndarray:
    """phi of each candidate, (K, len(FEATURES)) float32: `hits` carry the memories,
    `vectors` their rows as indexed (own vector first, then its turns')."""
    query_traits = QueryTraits.of(query)
    memories = [h.memory for h in hits]
    traits = [memory_traits(m) for m in memories]
    out = np.empty((len(hits), len(FEATURES)), np.float32)
    dense, turn = _cosines(query_vec, vectors)
    words = np.log1p([t.text.words for t in traits])
    out[:, _AT["z"]] = zscore(np.stack(
        [dense, turn, words, _session_mass(memories, zscore(fused))], axis=1))
    out[:, _AT["item"]] = query_traits.per_items([t.text for t in traits])
    names = query_traits.names
    out[:, _AT["memory"]] = [
        (share(names, t.speakers) if names else 0.0, query_traits.date_match(t.month_year),
         assistant_only(m.speakers), bool(m.attrs.get("provisional")))
        for m, t in zip(memories, traits)]
    out[:, _COLUMN["recency"]] = _recency([t.stamp for t in traits])
    return out


def _cosines(query_vec: np.ndarray, vectors: Sequence[np.ndarray]) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """Each candidate's own cosine and its best turn's (its own when it has no turn rows),
    in one product over all rows; a candidate without rows scores 0."""
    sizes = np.array([len(v) for v in vectors])
    rows = [v if len(v) else np.zeros((1, len(query_vec)), np.float32) for v in vectors]
    cos = np.concatenate(rows) @ query_vec
    starts = np.concatenate([[0], np.cumsum(np.maximum(sizes, 1))[:-1]])
    dense = cos[starts].astype(np.float32)
    cos[starts[sizes > 1]] = -np.inf
    return dense, np.maximum.reduceat(cos, starts).astype(np.float32)


def _session_mass(memories: Sequence[Memory], z: np.ndarray) -> np.ndarray:
    """Per candidate: the positive fused z-scores of the candidates from its session (its
    own included): a topic talked over at length in one session."""
    sessions = [m.session_ids[0] if m.session_ids else m.id for m in memories]
    mass: dict[str, float] = {}
    for session, value in zip(sessions, z.tolist()):
        mass[session] = mass.get(session, 0.0) + max(value, 0.0)
    return np.array([mass[s] for s in sessions], np.float32)


def _recency(stamps: list[float | None]) -> np.ndarray:
    """Each date's rank among the known ones, scaled 0..1; 0.5 where unknown or all equal."""
    known = sorted({s for s in stamps if s is not None})
    if len(known) < 2:
        return np.full(len(stamps), 0.5, np.float32)
    rank = {s: i / (len(known) - 1) for i, s in enumerate(known)}
    return np.array([rank[s] if s is not None else 0.5 for s in stamps], np.float32)


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
        return [float((v @ query_vec).max() / COSINE_SPREAD
                      + np.dot(traits.per_item(text_traits(t)), weights.w[_AT["item"]]))
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
