"""Why a search returned what it returned: each candidate's retrieval signals, what the
reranker made of them, which read steps after the rerank moved it (a named time, the
latest value, a successor, gathering), the final order, each hit's score in parts (its
root is `hit.score`) and where a word budget cuts the hits.

Computed only for `search(..., explain=True)`, after the search, from what it kept (the
candidates, the reranker's `Ranking`) plus one more pass of the index's fusion for the
signals' scale; a plain search pays nothing for it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..metadata import matches
from ..text import count_words
from ..types import MemoryHit, SearchResult
from .fusion import FusionWeights, Scale, scaled
from .provisional import PREFIX
from .score import PLACE, Score, place_discount

if TYPE_CHECKING:
    from .cache import IndexCache

DEFAULT_BUDGET = 1000
"""Words of context the cut is shown for unless asked otherwise (the Rtok@1000 budget)."""

RETRIEVAL_PARTS = ("bm25", "dense", "turn", "neighbours", "assistant")
"""The parts a candidate's fused retrieval score is the sum of."""


@dataclass(slots=True)
class Part:
    """One node of a score's explanation, as Lucene's `Explanation`: a value, what it is,
    and the parts it is made of."""

    value: float
    description: str
    parts: list[Part] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "description": self.description,
                "parts": [p.as_dict() for p in self.parts]}


@dataclass(slots=True)
class Row:
    """One candidate of a search, explained."""

    memory_id: str
    text: str
    retrieval_rank: int
    """Its place among the candidates by fused retrieval score (1 = best)."""
    signals: dict[str, float | None]
    """Raw signals: `bm25` (None: scored outside the bank's index), `dense` (cosine to its own
    vector), `turn` (best cosine among its turns' vectors), `fused` (retrieval score)."""
    retrieval: dict[str, float]
    """The fused score's parts (`RETRIEVAL_PARTS`; empty when the index was not used)."""
    rerank: dict[str, float]
    """What the reranker added: `retrieval_z` (the fused score z-scored over the
    candidates) and each feature's weight x value (features reranker)."""
    rerank_score: float | None
    """The reranker's score (None: no reranker ran)."""
    rerank_rank: int | None
    """Its place in the reranked window, from 1 (None: deeper than the window)."""
    final_rank: int | None
    """Its place in the returned hits, from 1 (None: not returned)."""
    relevance: float
    """Its own relevance to the query (`rmm_core.read.score`): a candidate's score."""
    words: int
    provisional: bool
    moved: list[tuple[str, int | None, int | None]] = field(default_factory=list)
    """Each read step after the rerank that changed its place: (step, place before, place
    after), None where it was not among the hits."""
    current: bool = True
    """The hit's (or candidate's) `current`: whether what it says still holds."""
    score: Part | None = None
    """A returned hit's score in parts; its value is the hit's `score` (None: not returned)."""


@dataclass(slots=True)
class Explanation:
    """A search explained: every candidate (`rows`, in final order, then the rest by rerank
    order) and where `budget` words of context would cut the hits."""

    query: str
    rows: list[Row]
    reranker: str
    weights: dict[str, float] = field(default_factory=dict)
    budget: int = DEFAULT_BUDGET
    timings: dict[str, float] = field(default_factory=dict)
    """Milliseconds the search spent in each stage (`Laps`), in order."""

    @property
    def hits(self) -> list[Row]:
        """The returned hits' rows, in final order."""
        return [r for r in self.rows if r.final_rank is not None]

    def cut(self, budget: int | None = None) -> int:
        """How many of the hits fit `budget` words (default `self.budget`), taken in order;
        strict: the first hit that does not fit ends the list."""
        budget = self.budget if budget is None else budget
        used = 0
        for n, row in enumerate(self.hits):
            used += row.words
            if used > budget:
                return n
        return len(self.hits)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the CLI's `--json`)."""
        return {"query": self.query, "reranker": self.reranker, "weights": self.weights,
                "budget": self.budget, "cut": self.cut(), "timings_ms": self.timings,
                "rows": [{f: getattr(r, f) if f != "score" or r.score is None
                          else r.score.as_dict() for f in Row.__slots__} for r in self.rows]}


def explain(result: SearchResult, *, indexes: IndexCache | None, weights: FusionWeights,
            reranker: Any, query_vec: np.ndarray, vectors: Sequence[np.ndarray],
            wanted: Mapping[str, Any], top: int, budget: int = DEFAULT_BUDGET,
            steps: Sequence[tuple[str, list[str]]] = (), scores: Sequence[Score] = (),
            timings: Mapping[str, float] | None = None) -> Explanation:
    """The explanation of a finished search. `vectors` are its candidates' vector rows in
    candidate order, `wanted`/`top` the metadata filter and depth it searched the index
    with, `indexes` None when it searched inside the database (no index scale), `steps`
    the hits' memory ids after the rerank and after each read step that changed them,
    `scores` the hits' scores in parts, in hit order."""
    candidates = result.candidates
    ranking = result.state.get("ranking")
    dense, turn = _cosines(query_vec, vectors)
    parts, bm25 = _retrieval_parts(result, indexes, weights, query_vec, wanted, top, turn)
    rerank, named = _rerank_parts(result, reranker, ranking, len(query_vec))
    order = list(ranking.order) if ranking is not None else list(range(len(candidates)))
    rerank_rank = {i: n for n, i in enumerate(order, 1)}
    final = {h.memory.id: h.rank for h in result.hits}
    rows = []
    for i, c in enumerate(candidates):
        mid = c.memory.id
        rows.append(Row(
            memory_id=mid, text=c.text, retrieval_rank=i + 1,
            signals={"bm25": bm25.get(mid), "dense": float(dense[i]), "turn": float(turn[i]),
                     "fused": float(c.retrieval if c.retrieval is not None else c.score)},
            retrieval=parts.get(mid, {}), rerank=rerank[i] if i < len(rerank) else {},
            rerank_score=float(ranking.scores[i])
            if ranking is not None and i < len(ranking.scores) else None,
            rerank_rank=rerank_rank.get(i), final_rank=final.get(mid), relevance=c.score,
            words=count_words(c.text), provisional=mid.startswith(PREFIX)
            or bool(c.memory.attrs.get("provisional")), current=c.current))
    extra = [h for h in result.hits if h.memory.id not in {c.memory.id for c in candidates}]
    score_of = {h.memory.id: s for h, s in zip(result.hits, scores)}
    rows += [_linked(h, score_of[h.memory.id].relevance if h.memory.id in score_of else h.score)
             for h in extra]  # A-MEM links: returned without being candidates
    for row in rows:
        row.moved = _moves(row.memory_id, steps)
        if row.memory_id in score_of:
            row.score = score_parts(score_of[row.memory_id], row)
    big = len(rows) + 1
    rows.sort(key=lambda r: (r.final_rank if r.final_rank is not None else big,
                             r.rerank_rank if r.rerank_rank is not None else big))
    return Explanation(result.query, rows, reranker_kind(reranker), named, budget,
                       dict(timings or {}))


class Laps:
    """Seconds one search spends in each stage, in order; a stage run twice (a search that
    draws deeper) adds up."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._since = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - self._since
        self._since = now

    def ms(self) -> dict[str, float]:
        return {stage: round(1000 * s, 2) for stage, s in self.seconds.items()}


class ReadSteps:
    """The hits' order after the rerank and after each read step that changed it, kept only
    for a search that is explained (`orders`: step name, memory ids in order)."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.orders: list[tuple[str, list[str]]] = []

    def after(self, step: str, hits: Sequence[MemoryHit]) -> None:
        if not self.keep:
            return
        order = [h.memory.id for h in hits]
        if not self.orders or order != self.orders[-1][1]:
            self.orders.append((step, order))


def reranker_kind(reranker: Any) -> str:
    model = getattr(getattr(reranker, "scorer", None), "model", None)
    return getattr(model, "kind", "none") if model is not None else "none"


def _cosines(query_vec: np.ndarray, vectors: Sequence[np.ndarray]
             ) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's own cosine and its best turn's (its own when it has no turns)."""
    dense = np.zeros(len(vectors), np.float32)
    turn = np.zeros(len(vectors), np.float32)
    for i, rows in enumerate(vectors):
        if len(rows):
            sims = np.asarray(rows, np.float32) @ query_vec
            dense[i] = sims[0]
            turn[i] = sims[1:].max() if len(sims) > 1 else sims[0]
    return dense, turn


def _retrieval_parts(result: SearchResult, indexes: IndexCache | None,
                     weights: FusionWeights, query_vec: np.ndarray,
                     wanted: Mapping[str, Any], top: int, turn: np.ndarray
                     ) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Per memory id: the fused score's parts and its raw BM25, on the scale the index's
    fusion z-scores with (found again by the same fusion, which is deterministic)."""
    if indexes is None:
        return {}, {}
    index = indexes.get(result.user_id)
    if not len(index):
        return {}, {}
    subset = np.flatnonzero([matches(m, wanted) for m in index.metadata]) if wanted else None
    found = index.search(result.query, query_vec, top=top, weights=weights, subset=subset)
    scale: Scale | None = found.scale
    position = {mid: p for p, mid in enumerate(index.ids)}
    lexical = index.lexical_scores(result.query)
    unit = index.unit_scores(query_vec)
    parts: dict[str, dict[str, float]] = {}
    bm25: dict[str, float] = {}
    for i, c in enumerate(result.candidates):
        p = position.get(c.memory.id)
        if p is None or scale is None:
            continue
        bm25[c.memory.id] = float(lexical[p])
        lex = weights.lexical * float(scaled(lexical[p], scale.lexical or (0.0, 1.0)))
        den = weights.dense * float(scaled(unit[p], scale.unit))
        tur = weights.turn * float(scaled(turn[i], scale.turn))
        spread = scale.fused if scale.fused is not None else 1.0
        helper = weights.assistant * spread * float(weights.by_assistant(c.memory.speakers))
        fused = float(c.retrieval if c.retrieval is not None else 0.0)
        parts[c.memory.id] = {"bm25": lex, "dense": den, "turn": tur, "assistant": -helper,
                              "neighbours": fused - lex - den - tur + helper}
    return parts, bm25


def _rerank_parts(result: SearchResult, reranker: Any, ranking: Any, dim: int
                  ) -> tuple[list[dict[str, float]], dict[str, float]]:
    """Per candidate, the reranker's score in parts (features reranker: z(fused) and each
    feature's weight x value), and the weights by name."""
    if ranking is None or getattr(ranking, "features", None) is None:
        return [], {}
    from ..learn.rerank_features import FEATURES
    from ..learn.rerank_policy import zscore

    w = reranker.weights_for(result.user_id, dim).w
    base = zscore(ranking.fused)
    parts = [{"retrieval_z": float(base[i]),
              **{name: float(ranking.features[i, j] * w[j]) for j, name in enumerate(FEATURES)}}
             for i in range(len(ranking.fused))]
    return parts, {name: float(v) for name, v in zip(FEATURES, w)}


def _moves(memory_id: str, steps: Sequence[tuple[str, list[str]]]
           ) -> list[tuple[str, int | None, int | None]]:
    """The read steps that changed the memory's place among the hits, with its places."""
    places = [(name, order.index(memory_id) + 1 if memory_id in order else None)
              for name, order in steps]
    return [(name, before, after) for (_, before), (name, after) in zip(places, places[1:])
            if before != after]


def _linked(hit: MemoryHit, relevance: float) -> Row:
    return Row(hit.memory.id, hit.text, 0, {"bm25": None, "dense": None, "turn": None,
                                            "fused": None}, {}, {}, None, None, hit.rank,
               relevance, count_words(hit.text), False, current=hit.current)


def score_parts(score: Score, row: Row) -> Part:
    """A hit's score as a tree whose root is its value: its match (the smaller of its
    relevance and the relevance of the hit above that capped it) times what its place leaves
    of it (the reranker's place, then each read step's move, where they lead to its place)."""
    match = [Part(score.relevance, "relevance")]
    if score.capped_by is not None:
        match.append(Part(score.match, f"capped by hit {score.capped_by}"))
    return Part(score.value, f"score: match x place (1 - {PLACE} x (1 - 1/place))",
                [Part(score.match, "match", match),
                 Part(score.discount, f"place {score.place}", _place_steps(row, score.place))])


def _place_steps(row: Row, place: int) -> list[Part]:
    """The reranker's place and each read step's move, as factors of the place's discount,
    when they lead from the one to `place` (none for a hit past the reranked window, or
    one the read steps left where the reranker put it)."""
    if row.rerank_rank is None:
        return []
    parts = [Part(place_discount(row.rerank_rank), f"the reranker's place {row.rerank_rank}")]
    at = row.rerank_rank
    for step, before, after in row.moved:
        if before != at or after is None:
            return []
        parts.append(Part(place_discount(after) / place_discount(before),
                          f"{step} {before}→{after}"))
        at = after
    return parts if at == place and len(parts) > 1 else []


def format_explanation(explanation: Explanation, *, width: int = 60) -> str:
    """The explanation as a table for a terminal (`rmm search --explain`)."""
    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    lines = [f"query: {explanation.query}", f"reranker: {explanation.reranker}; "
             f"{explanation.budget} words of context hold the first {explanation.cut()} "
             f"of {len(explanation.hits)} hits",
             *([("time: " + ", ".join(f"{stage} {ms:.1f} ms" for stage, ms
                                       in explanation.timings.items()))]
               if explanation.timings else []),
             f"{'final':>5} {'rerank':>6} {'retr':>4} {'bm25':>6} {'dense':>6} {'turn':>6} "
             f"{'fused':>6} {'rerank':>7} {'score':>6} {'words':>5}  text"]
    cut = explanation.cut()
    for row in explanation.rows:
        if row.final_rank == cut + 1 and cut < len(explanation.hits):
            lines.append(f"  ---- {explanation.budget} words: the hits below do not fit ----")
        s = row.signals
        flat = " ".join(row.text.split())
        text = ("[provisional] " if row.provisional else "") + flat[:width]
        lines.append(
            f"{_place(row.final_rank):>5} {_place(row.rerank_rank):>6} "
            f"{_place(row.retrieval_rank or None):>4} "
            f"{num(s['bm25']):>6} {num(s['dense']):>6} {num(s['turn']):>6} {num(s['fused']):>6} "
            f"{num(row.rerank_score):>7} {num(row.score.value if row.score else None):>6} "
            f"{row.words:>5}  {text}")
        top = sorted(((v, k) for k, v in row.rerank.items() if k != "retrieval_z" and v),
                     key=lambda item: -abs(item[0]))[:3]
        if row.final_rank is not None and top:
            lines.append("       reranker: " + ", ".join(f"{k} {v:+.2f}" for v, k in top))
        if row.moved:
            lines.append("       moved: " + moves_text(row.moved))
        if row.score is not None:
            lines.append("       score: " + score_text(row.score))
    return "\n".join(lines)


def score_text(score: Part) -> str:
    """`0.305 = match 0.401 (relevance 0.432, capped by hit 2 0.401) x place 3 0.800 (...)`."""
    def part(p: Part) -> str:
        inner = f" ({', '.join(part(c) for c in p.parts)})" if p.parts else ""
        return f"{p.description} {p.value:.3f}{inner}"

    return f"{score.value:.3f} = " + " x ".join(part(p) for p in score.parts)


def moves_text(moved: Sequence[tuple[str, int | None, int | None]]) -> str:
    """`latest value first 5→2, gathering 2→3` (places from 1; '-': not among the hits)."""
    return ", ".join(f"{name} {_place(before)}→{_place(after)}"
                     for name, before, after in moved)


def _place(rank: int | None) -> str:
    return "-" if rank is None else str(rank)
