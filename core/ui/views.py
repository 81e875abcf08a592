"""What each page shows, read through the `Store` and `ReflectiveMemory` API only (every
call scoped by the user id of the page): plain data for the templates."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..learn.rerank_features import FEATURES, FeatureModel, FeatureWeights
from ..learn.rerank_store import WeightStore
from ..memory import ReflectiveMemory
from ..types import Memory, Turn, as_datetime

PER_PAGE = 50


@dataclass(slots=True)
class UserRow:
    user_id: str
    memories: int
    open_sessions: int
    pending: int


@dataclass(slots=True)
class UserPage:
    rows: list[UserRow]
    total: int
    page: int
    pages: int


def users(memory: ReflectiveMemory, query: str = "", page: int = 1,
          per_page: int = PER_PAGE) -> UserPage:
    """One page of the users (those whose id holds `query`), each with their counts (counted
    for the page's users only)."""
    store = memory.store
    needle = query.casefold().strip()
    found = sorted(u for u in store.users() if not needle or needle in u.casefold())
    pages = max(1, -(-len(found) // per_page))
    page = min(max(page, 1), pages)
    rows = []
    for user in found[(page - 1) * per_page:page * per_page]:
        counts = store.counts(user)
        backlog = store.reflection_counts(user)
        sessions = store.sessions(user)
        rows.append(UserRow(user, counts["memories"],
                            sum(1 for s in sessions if s.status == "open"),
                            backlog["waiting"] + backlog["failed"]))
    return UserPage(rows, len(found), page, pages)


@dataclass(slots=True)
class Filters:
    """The memory list's filters, as read from the page's query string."""

    text: str = ""
    key: str = ""
    value: str = ""
    agent_id: str = ""
    run_id: str = ""
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def of(cls, params: Mapping[str, str]) -> Filters:
        """Filters from query parameters; a bad date is an `InvalidInputError`."""
        get = lambda name: (params.get(name) or "").strip()  # noqa: E731
        return cls(get("text"), get("key"), get("value"), get("agent_id"), get("run_id"),
                   _date(get("since"), "since"), _date(get("until"), "until"))

    def keep(self, m: Memory) -> bool:
        meta = m.metadata
        when = _naive(m.valid_from)
        return ((not self.text or self.text.casefold() in m.text.casefold())
                and (not self.key or (self.key in meta and (
                    not self.value or str(meta[self.key]) == self.value)))
                and (not self.agent_id or str(meta.get("agent_id", "")) == self.agent_id)
                and (not self.run_id or str(meta.get("run_id", "")) == self.run_id)
                and (self.since is None or when >= self.since)
                and (self.until is None or when <= self.until))

    def params(self) -> dict[str, str]:
        """The filters as query parameters (for the pager's links)."""
        out = {"text": self.text, "key": self.key, "value": self.value,
               "agent_id": self.agent_id, "run_id": self.run_id,
               "since": self.since.date().isoformat() if self.since else "",
               "until": self.until.date().isoformat() if self.until else ""}
        return {k: v for k, v in out.items() if v}


def _date(text: str, what: str) -> datetime | None:
    return _naive(as_datetime(text, what)) if text else None


def _naive(value: datetime) -> datetime:
    return value.replace(tzinfo=None)


@dataclass(slots=True)
class MemoryPage:
    memories: list[Memory]
    total: int
    shown_from: int
    page: int
    pages: int
    by_month: list[tuple[str, int]]


def memory_page(memory: ReflectiveMemory, user_id: str, filters: Filters,
                page: int = 1, per_page: int = PER_PAGE) -> MemoryPage:
    """One page of the user's memories that pass `filters`, newest first, and how many
    memories the user gained each month (for the chart)."""
    everything = memory.store.memories(user_id, with_versions=False)
    kept = [m for m in everything if filters.keep(m)]
    kept.sort(key=lambda m: _naive(m.valid_from), reverse=True)
    pages = max(1, -(-len(kept) // per_page))
    page = min(max(page, 1), pages)
    start = (page - 1) * per_page
    months = Counter(m.valid_from.strftime("%Y-%m") for m in everything)
    shown = memory.store.memories(user_id, [m.id for m in kept[start:start + per_page]])
    return MemoryPage(shown, len(kept), start, page, pages, sorted(months.items()))


@dataclass(slots=True)
class SessionView:
    session_id: str
    turns: list[Turn]


@dataclass(slots=True)
class MemoryDetail:
    memory: Memory
    sessions: list[SessionView]
    """The sessions its source turns are in, every turn shown (its own ones marked)."""
    missing_refs: list[str]
    earlier: list[Memory]
    """The chain of memories it superseded, nearest first."""
    later: list[Memory]
    """The chain of memories that superseded it, nearest first."""
    conflicts: list[Memory]


def memory_detail(memory: ReflectiveMemory, user_id: str, memory_id: str) -> MemoryDetail:
    """A memory with its provenance and its supersession chain (`NotFoundError` when the
    user has no such memory)."""
    store = memory.store
    found = memory.get(memory_id, user_id=user_id)
    sessions = [SessionView(s, store.turns(user_id, s)) for s in found.session_ids]
    seen = {t.id for v in sessions for t in v.turns}
    return MemoryDetail(found, sessions, [r for r in found.refs if r not in seen],
                        _chain(memory, user_id, found, lambda m: m.supersedes[:1]),
                        _chain(memory, user_id, found,
                               lambda m: [m.superseded_by] if m.superseded_by else []),
                        store.memories(user_id, found.conflicts) if found.conflicts else [])


def _chain(memory: ReflectiveMemory, user_id: str, start: Memory, step: Any,
           limit: int = 50) -> list[Memory]:
    """Memories reached from `start` by `step` (ids of the next), each read for this user
    only; stops at a loop or a memory that is gone."""
    out, seen, current = [], {start.id}, start
    for _ in range(limit):
        ids = [i for i in step(current) if i not in seen]
        found = memory.store.memories(user_id, ids[:1]) if ids else []
        if not found:
            break
        current = found[0]
        seen.add(current.id)
        out.append(current)
    return out


@dataclass(slots=True)
class Learning:
    """The feature reranker's weights as stored for a user's searches, over its logged
    steps; the examples the starting weights came with, and this store's own since."""

    name: str
    scope: str
    current: dict[str, float]
    history: list[tuple[int, dict[str, float]]]
    """(examples learned from, weights) at the base and after each logged step."""
    examples: int
    """Feedback examples this store gave (not those the starting weights were trained on)."""
    logged_steps: int
    folded: bool
    """Steps were folded into the base: history before it is not kept."""
    start: str | None
    """Where the starting weights came from (None: zero weights, the hand-set fusion)."""
    start_examples: int
    """The examples the starting weights were trained on before this store (packaged)."""


def learning(memory: ReflectiveMemory, user_id: str) -> Learning | None:
    """None unless the feature reranker (the default) ranks this memory's searches."""
    config = memory.config
    if config.reranker.kind != "features":
        return None
    setting = config.reranker.weights
    model = FeatureModel(_start(setting))
    name = WeightStore.name(config.reranker.scope, user_id, model.kind)
    store = memory.store
    version, seqs = store.state_log(name)
    _, blob = store.load_state(name)
    weights = model.decode(blob) if blob else model.initial(len(FEATURES))
    history = [(weights.steps, weights.named())]
    deltas = store.state_deltas(name, seqs) if seqs else {}
    for seq in sorted(deltas):
        weights = model.apply(weights, [deltas[seq]], name)
        history.append((weights.steps, weights.named()))
    shipped = model.start.steps
    start = None if setting is None else \
        "the packaged weights" if setting == "shipped" else f"the weights in {setting}"
    return Learning(name if config.reranker.scope == "global" else "this user's own",
                    config.reranker.scope, weights.named(), history,
                    max(0, weights.steps - shipped), len(deltas), version > 0 and bool(blob),
                    start, shipped)


def _start(setting: str | None) -> FeatureWeights | None:
    from ..learn.rerank import start_weights

    return start_weights(setting)


def page_number(text: str | None) -> int:
    try:
        return max(1, int(text or 1))
    except ValueError as exc:
        raise InvalidInputError(f"page must be a number, got {text!r:.20}") from exc


def bounded(text: str | None, what: str, default: int, low: int, high: int) -> int:
    """An integer query parameter within [low, high] (`InvalidInputError` otherwise)."""
    if not text:
        return default
    try:
        value = int(text)
    except ValueError as exc:
        raise InvalidInputError(f"{what} must be a number, got {text!r:.20}") from exc
    if not low <= value <= high:
        raise InvalidInputError(f"{what} must be {low}-{high}, got {value}")
    return value


def breakdown(rows: Sequence[Any]) -> tuple[list[tuple[str, dict[str, float]]], float]:
    """Each returned hit's reranker score in parts, for the stacked-bar chart: its fused
    retrieval score's parts scaled as the reranker's z-score over the candidates reads them,
    then each feature's weight x value; and the centring that z-score subtracts from every
    hit alike (left out of the bars: a bar's parts plus it make the hit's reranker score)."""
    fused = np.array([r.signals["fused"] for r in rows if r.retrieval_rank > 0
                      and r.signals["fused"] is not None], np.float32)
    mean, spread = (float(fused.mean()), float(fused.std()) + 1e-6) if len(fused) else (0, 1)
    out = []
    for row in rows:
        if row.final_rank is None:
            continue
        parts: dict[str, float] = {}
        if row.retrieval and row.rerank:
            parts.update({f"retrieval {k}": v / spread for k, v in row.retrieval.items()})
        elif row.rerank:
            parts["retrieval (z)"] = row.rerank["retrieval_z"]
        elif row.signals["fused"] is not None:
            parts["retrieval (fused)"] = row.signals["fused"]
        parts.update({k: v for k, v in row.rerank.items() if k != "retrieval_z"})
        out.append((f"#{row.final_rank}", parts))
    return out, -mean / spread
