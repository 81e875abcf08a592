"""The search pipeline: fused candidates (index or database, plus open turns,
`rmm_core.read.pool`) → one ranked list (`rmm_core.read.listed`) → excerpts as far as a
word budget reads (`rmm_core.read.excerpted`) → relevance scores, assembled into one
`SearchResult`."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from copy import copy
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config import MemoryConfig, unit_words
from ..metadata import matches
from ..models.cosines import cosine_scale
from ..models.embed import Embedder, query_vectors
from ..storage.base import Store
from ..types import Memory, MemoryHit, SearchResult
from .cache import IndexCache
from .dbsearch import DatabaseSearcher
from .excerpt import GATHER_WORDS, WHOLE
from .excerpted import excerpted
from .explain import Laps
from .explain import explain as explained
from .index import FusionWeights
from .listed import Lister, longer, window_for
from .pool import CandidateSource
from .provisional import OpenTurns
from .ranked import depth_for, within
from .score import relevance_by_id, relevances, scored

if TYPE_CHECKING:
    from ..learn.rerank import LearnedReranker


class Searcher:
    """Retrieval for `ReflectiveMemory.search` over one store, index cache and reranker."""

    def __init__(self, store: Store, embedder: Embedder, config: MemoryConfig,
                 indexes: IndexCache, reranker: LearnedReranker,
                 weights: FusionWeights) -> None:
        self.store, self.embedder, self.config = store, embedder, config
        self.indexes, self.reranker, self.weights = indexes, reranker, weights
        self.database = DatabaseSearcher(store, weights, config.search.backend,
                                         indexes.cache)
        self.open_turns = OpenTurns(store, embedder, unit_words=unit_words(config),
                                    stemmer=indexes.stemmer)
        self.source = CandidateSource(store, embedder, config, indexes, self.database,
                                      self.open_turns, weights)
        self.lister = Lister(store, config, reranker, indexes.stemmer, embedder)

    def search(self, query: str, *, user_id: str, k: int | None, wanted: Mapping[str, Any],
               session_id: str | None, follow_links: bool, explore: bool,
               min_score: float | None, as_of: datetime | None = None,
               max_words: int | None = None, explain: bool = False) -> SearchResult:
        """The checked arguments of `ReflectiveMemory.search`, searched (`explain`: with
        `result.explanation`, see `rmm_core.read.explain`). The list is one ranking whatever
        `k`, `min_score` and `max_words` are (`rmm_core.read.ranked`); they only cut it."""
        result = SearchResult(uuid.uuid4().hex, query, user_id, [])
        if not query.strip():
            return result
        laps = Laps()
        window = window_for(self.config, query)
        depth = depth_for(window, k)
        pool = self.source.pool(user_id, query, wanted, session_id, as_of, laps)
        if pool is None:
            return result
        query_vec = pool.query_vec
        need = None if explain else _first_read(k, max_words)
        listed = self.lister.listed(pool.draw(depth), window, query, query_vec, need,
                                    user_id=user_id, wanted=wanted,
                                    follow_links=follow_links, explore=explore, as_of=as_of,
                                    explain=explain, laps=laps)
        cuts: dict[tuple[str, int], MemoryHit] = {}
        while True:  # a budget the hits leave unfilled reads further, then draws deeper
            shown = listed.hits[:k]
            if self.config.search.excerpts:
                shown = excerpted(shown, listed.speakers, query, query_vec, listed.rows,
                                  self.indexes.stemmer, max_words, cuts)
            hits = within(shown, max_words)
            laps.lap("excerpts")
            if max_words is None or len(hits) < len(shown) or \
                    k is not None and len(hits) >= k:
                break
            if listed.longer is not None:
                listed = longer(listed, 2 * len(listed.head))
            elif pool.exhausted:
                break
            else:
                depth *= 2
                listed = self.lister.deeper(listed, pool.draw(depth))
            laps.lap("retrieval")
        candidates, rows, ranking = listed.candidates, listed.rows, listed.ranking
        close = dict(zip((c.memory.id for c in candidates), relevances(
            query_vec, [rows[c.memory.id] for c in candidates],
            cosine_scale(self.embedder)).tolist()))
        stemmer = self.indexes.stemmer
        kept = scored(hits, relevance_by_id(hits, query, close, stemmer), min_score)
        own = _Copies()
        result.hits = hits = [replace(h, memory=own(h.memory), rank=s.place, score=s.value,
                                      current=still_holds(h, as_of))
                              for h, s in zip(hits, kept)]
        laps.lap("scores")
        if ranking is not None:  # the reranker's own picks among what was shown
            ranking.kept = min(len(hits), len(listed.head), ranking.kept)

        def scored_candidates() -> list[MemoryHit]:
            relevance_of = relevance_by_id(candidates, query, close, stemmer)
            shown = {h.memory.id: h.current for h in hits}
            return [MemoryHit(own(c.memory), relevance_of[c.memory.id], c.text, c.rank,
                              retrieval=c.score,
                              current=shown.get(c.memory.id, still_holds(c, as_of)))
                    for c in candidates]

        result.candidates = scored_candidates
        result.state = {"query_vec": query_vec, "ranking": ranking}
        if explain:
            result.explanation = explained(
                result, indexes=None if self.database.wanted(user_id) else self.indexes,
                weights=self.weights, reranker=self.reranker, query_vec=query_vec,
                vectors=[rows[c.memory.id] for c in candidates], wanted=wanted, top=depth,
                steps=listed.steps.orders, scores=kept, timings=laps.ms())
        return result

    def similar(self, user_id: str, text: str, vector: np.ndarray,
                metadata: Mapping[str, Any], top: int) -> list[str]:
        """The ids of the user's memories nearest to a written one, among those carrying its
        scalar `metadata`: the `top` nearest to its `vector` and the `top` best for `text`
        by BM25 (cheaper than a search's fusion, and a write needs no ranking)."""
        wanted = {k: (v,) for k, v in metadata.items() if isinstance(v, (str, int, float, bool))}
        database = self.database  # a write never starts the `auto` build; a search does
        if (database.ready or database.backend == "database") and database.wanted(user_id):
            return [mid for mid, _ in database.candidates(user_id, text, vector, top,
                                                          wanted)[0]]
        index = self.indexes.get(user_id)
        if not len(index):
            return []
        keep = (lambda p: matches(index.metadata[p], wanted)) if wanted else (lambda p: True)
        dense = [p for p in index.dense_scores(vector, top * 4) if keep(p)][:top]
        lexical = index.lexical_scores(text)
        best = np.argsort(-lexical, kind="stable")[: top * 4]
        words = [int(p) for p in best if lexical[p] > 0 and keep(int(p))][:top]
        return [index.ids[p] for p in dict.fromkeys([*dense, *words])]

    def best_similarity(self, query: str, user_id: str) -> float:
        """The best cosine of any of the user's memories to `query` (0 when none)."""
        index = self.indexes.get(user_id)
        if not len(index):
            return 0.0
        found = index.dense_scores(query_vectors(self.embedder, [query])[0], 1)
        return cosine_scale(self.embedder).of_query(max(found.values(), default=0.0))

    def learned_scores(self, query: str, texts: Sequence[str], ids: Sequence[str | None], *,
                       user_id: str) -> list[float]:
        """The reranker's score of each text (by its memory's stored rows where `ids` names
        one of the user's memories, else by its embedding)."""
        stored = self.store.memory_vectors(user_id, [i for i in ids if i is not None])
        missing = [t for t, i in zip(texts, ids) if i not in stored]
        query_vec = query_vectors(self.embedder, [query])[0]
        fresh = iter(self.embedder.embed(missing))
        return self.reranker.learned_scores(
            user_id, query_vec, [stored[i] if i in stored else next(fresh)[None, :] for i in ids],
            query=query, texts=texts)


class _Copies:
    """One copy of each memory a search returns, shared by its hits and candidates: the
    memories searches draw are shared (`UserIndex.decoded`), and a caller may change what
    it is given."""

    def __init__(self) -> None:
        self.made: dict[str, Memory] = {}

    def __call__(self, memory: Memory) -> Memory:
        made = self.made.get(memory.id)
        if made is None:
            made = self.made[memory.id] = copy(memory)
        return made


def _first_read(k: int | None, max_words: int | None) -> int | None:
    """How many hits a question that gathers orders first: `k`, or as many as `max_words`
    holds of hits cut to GATHER_WORDS (a budget they leave unfilled reads twice as many);
    None (no cut): all."""
    if max_words is None:
        return k
    fit = -(-max_words // GATHER_WORDS) + WHOLE
    return fit if k is None else min(k, fit)


def still_holds(hit: MemoryHit, as_of: datetime | None) -> bool:
    """A hit's `current`: not marked an older version by the read steps, and its memory not
    superseded by `as_of` (None: now); a memory changed only in part holds unless the
    question is about the changed part (`validity.arrange` marks it then)."""
    if hit.memory.changed_part is not None:
        return hit.current
    return hit.current and hit.memory.held_at(as_of)
