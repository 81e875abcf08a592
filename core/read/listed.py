"""One search's ranked list before it is cut: the window of candidates reranked, followed
by its linked memories (A-MEM) and arranged by the read steps (`rmm_core.read.steps`),
then the deeper candidates in retrieval order. It depends on the query alone, never on
the cut a caller asks for (`rmm_core.read.ranked`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config import MemoryConfig
from ..metadata import matches
from ..models.cosines import cosine_scale
from ..models.embed import Embedder
from ..storage.base import Store
from ..types import Memory, MemoryHit
from .context import hit_text
from .excerpt import WHOLE, gathers
from .excerpted import excerpted
from .explain import Laps, ReadSteps
from .gather import gathered_upto
from .pool import Pooled
from .steps import arranged

if TYPE_CHECKING:
    from ..learn.rerank import LearnedReranker

GATHER_WINDOW = 5
"""How many times `search.candidates` a question that gathers reranks and arranges."""


@dataclass(slots=True)
class Listed:
    """One search's ranked list before it is cut, with what scoring and feedback need."""

    hits: list[MemoryHit]
    head: list[MemoryHit]  # the window, reranked and arranged
    speakers: set[str]  # who speaks in the window past its first WHOLE hits
    candidates: list[MemoryHit]  # in retrieval order
    rows: dict[str, np.ndarray]  # each candidate's vector rows, by memory id
    ranking: Any  # the reranker's Ranking (None: nothing ranked)
    steps: ReadSteps
    window: int  # how many candidates the head was made of
    longer: Callable[[int], tuple[list[MemoryHit], bool]] | None = None
    """The head's first n hits and whether they are all (None: `head` is all of it): a
    question that gathers orders only as much of its window as a caller reads."""


def window_for(config: MemoryConfig, query: str) -> int:
    """How many candidates the reranker and the read steps order: `search.candidates`,
    GATHER_WINDOW times more for a question that gathers (its answer is spread over
    many turns, and gathering orders them by what they add). It depends on the query
    alone, never on the cut a caller asks for."""
    window = config.search.candidates
    return window * GATHER_WINDOW if config.search.excerpts and gathers(query) else window


class Lister:
    """Makes a search's one list from its drawn candidates, and reads it further or deeper
    when a word budget asks for more."""

    def __init__(self, store: Store, config: MemoryConfig, reranker: LearnedReranker,
                 stemmer: Callable | None, embedder: Embedder) -> None:
        self.store, self.config, self.reranker, self.stemmer = store, config, reranker, stemmer
        self.embedder = embedder

    def text(self, memory: Memory) -> str:
        """What a hit of `memory` puts into the context (`rmm_core.read.context`)."""
        return hit_text(memory, dates=self.config.search.context_dates)

    def listed(self, found: list[Pooled], window: int, query: str, query_vec: np.ndarray,
               need: int | None, *, user_id: str, wanted: Mapping[str, Any],
               follow_links: bool, explore: bool, as_of: datetime | None, explain: bool,
               laps: Laps) -> Listed:
        """The one ranked list of `found`: the window reranked and arranged by the read
        steps, then the deeper candidates in retrieval order (for a question that gathers,
        its first `need` hits, or all when None, until `Listed.longer` reads further)."""
        candidates = [MemoryHit(m, float(score), self.text(m), rank)
                      for rank, (m, score, _) in enumerate(found, 1)]
        rows = {c.memory.id: r for c, (_, _, r) in zip(candidates, found)}
        head, ranking = self.reranker.rerank(user_id, query_vec, candidates[:window],
                                             [r for _, _, r in found[:window]], window,
                                             explore=explore, query=query)
        laps.lap("rerank")
        steps = ReadSteps(explain)
        steps.after("rerank", head)
        if follow_links:
            head = self._linked(user_id, head, query_vec, wanted)
            steps.after("linked memories", head)
        head = arranged(head, query, as_of, steps, query_vec, rows, self.config,
                        self.embedder)
        speakers = {s for h in head[WHOLE:] for s in h.memory.speakers}
        longer = None
        if self.config.search.excerpts and gathers(query):  # ordered by what hits carry
            arranged_head, memo = head, {}

            def order(n: int | None) -> tuple[list[MemoryHit], bool]:
                return gathered_upto(arranged_head, lambda end: excerpted(
                    arranged_head[:end], speakers, query, query_vec, rows, self.stemmer,
                    None, memo), query, n, self.stemmer)

            head, complete = order(need)
            longer = None if complete else order
            steps.after("gathering", head)
        laps.lap("read steps")
        hits = head if longer else with_tail(head, candidates, window)
        return Listed(hits, head, speakers, candidates, rows, ranking, steps, window, longer)

    def deeper(self, listed: Listed, found: list[Pooled]) -> Listed:
        """`listed` with the candidates of a deeper draw of the same pool (`found`, which
        starts with `listed.candidates`) after its head: the head is the window's, so it
        stays as it was."""
        known = {c.memory.id: c for c in listed.candidates}
        candidates = [known.get(m.id) or MemoryHit(m, float(score), self.text(m), rank)
                      for rank, (m, score, _) in enumerate(found, 1)]
        rows = {**listed.rows, **{m.id: r for m, _, r in found}}
        return replace(listed, hits=with_tail(listed.head, candidates, listed.window),
                       candidates=candidates, rows=rows)

    def _linked(self, user_id: str, head: list[MemoryHit], query_vec: np.ndarray,
                wanted: Mapping[str, Any]) -> list[MemoryHit]:
        """A-MEM: each head hit followed by its linked memories; the head hits they displace
        come right after (deeper candidates they repeat drop out of the tail)."""
        from .links import follow_links as with_links

        linked = [h for h in with_links(self.store, user_id, head, query_vec, k=len(head),
                                        per_hit=self.config.notes.follow, text_of=self.text,
                                        scale=cosine_scale(self.embedder))
                  if matches(h.memory.metadata, wanted)]
        shown = {h.memory.id for h in linked}
        return [*linked, *(h for h in head if h.memory.id not in shown)]


def longer(listed: Listed, need: int) -> Listed:
    """`listed` with its first `need` hits of a question that gathers ordered."""
    head, complete = listed.longer(need)
    if not complete:
        return replace(listed, hits=head, head=head)
    return replace(listed, hits=with_tail(head, listed.candidates, listed.window),
                   head=head, longer=None)


def with_tail(head: list[MemoryHit], candidates: list[MemoryHit],
              window: int) -> list[MemoryHit]:
    """The head, then the candidates past the window in retrieval order, less those the
    head shows (a linked memory, A-MEM)."""
    shown = {h.memory.id for h in head}
    return [*head, *(c for c in candidates[window:] if c.memory.id not in shown)]
