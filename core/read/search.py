"""The search pipeline: fused candidates (index or database, plus open turns) → rerank →
linked memories → relevance scores, assembled into one `SearchResult`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from copy import copy
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config import MemoryConfig, unit_words
from ..language.tokens import tokenize
from ..metadata import matches
from ..models.cosines import cosine_scale
from ..models.embed import Embedder, query_vectors
from ..storage.base import Store
from ..types import Memory, MemoryHit, SearchResult
from .cache import IndexCache
from .context import hit_text
from .dbsearch import DatabaseSearcher
from .excerpt import EXCERPT_WORDS, GATHER_WORDS, WHOLE, excerpts, gathers
from .explain import Laps, ReadSteps
from .explain import explain as explained
from .gather import gathered_upto
from .index import QUESTION_WORDS, FusionWeights, Scale, UserIndex
from .latest import latest_first
from .provisional import OpenTurns
from .ranked import depth_for, within
from .score import coverage, relevances, scores
from .validity import about_the_past, arrange, valid_at
from .when import named_period, prefer_period

if TYPE_CHECKING:
    from ..learn.rerank import LearnedReranker

DECODED_MOST = 8192
"""Most memories a user's index snapshot keeps decoded between searches."""
GATHER_WINDOW = 5
"""How many times `search.candidates` a question that gathers reranks and arranges."""

Pooled = tuple[Memory, float, np.ndarray]
"""A search candidate before reranking: the memory, its fused score, its vector rows."""


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


@dataclass(slots=True)
class Pool:
    """A query's vector and its fused candidates, drawn deeper on demand: `fused(top,
    known)` gives the best `top`, reading again none of the memories in `known`."""

    query_vec: np.ndarray
    fused: Callable[[int, Mapping[str, Pooled]], list[Pooled]]
    as_of: datetime | None
    exhausted: bool = False  # the last draw holds every candidate there is
    known: dict[str, Pooled] = field(default_factory=dict)

    def draw(self, n: int) -> list[Pooled]:
        """The best `n` candidates (with `as_of`: those said by then and not yet superseded);
        a deeper draw starts with a shallower one's."""
        drawn = n * 3 if self.as_of else n
        while True:
            found = self.fused(drawn, self.known)
            self.known.update((f[0].id, f) for f in found)
            full = len(found) == drawn
            if self.as_of is not None:  # what was true then
                found = [f for f in found if valid_at(f[0], self.as_of)]
            if len(found) >= n or not full:
                self.exhausted = not full
                return found[:n]
            drawn *= 4


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
        window = self._window(query)
        depth = depth_for(window, k)
        pool = self._pool(user_id, query, wanted, session_id, as_of, laps)
        if pool is None:
            return result
        query_vec = pool.query_vec
        need = None if explain else _first_read(k, max_words)
        listed = self._listed(pool.draw(depth), window, query, query_vec, need,
                              user_id=user_id, wanted=wanted, follow_links=follow_links,
                              explore=explore, as_of=as_of, explain=explain, laps=laps)
        cuts: dict[tuple[str, int], MemoryHit] = {}
        while True:  # a budget the hits leave unfilled reads further, then draws deeper
            shown = listed.hits[:k]
            if self.config.search.excerpts:
                shown = self._excerpted(shown, listed.speakers, query, query_vec,
                                        listed.rows, max_words, cuts)
            hits = within(shown, max_words)
            laps.lap("excerpts")
            if max_words is None or len(hits) < len(shown) or \
                    k is not None and len(hits) >= k:
                break
            if listed.longer is not None:
                listed = self._longer(listed, 2 * len(listed.head))
            elif pool.exhausted:
                break
            else:
                depth *= 2
                listed = self._deeper(listed, pool.draw(depth))
            laps.lap("retrieval")
        candidates, rows, ranking = listed.candidates, listed.rows, listed.ranking
        close = dict(zip((c.memory.id for c in candidates), relevances(
            query_vec, [rows[c.memory.id] for c in candidates],
            cosine_scale(self.embedder)).tolist()))
        kept = scores(hits, self._relevance(hits, query, close), min_score)
        own = _Copies()
        result.hits = hits = [replace(h, memory=own(h.memory), rank=n, score=s,
                                      current=still_holds(h, as_of))
                              for n, (h, s) in enumerate(zip(hits, kept), 1)]
        laps.lap("scores")
        if ranking is not None:  # the reranker's own picks among what was shown
            ranking.kept = min(len(hits), len(listed.head), ranking.kept)

        def scored_candidates() -> list[MemoryHit]:
            relevance_of = self._relevance(candidates, query, close)
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
                steps=listed.steps.orders, timings=laps.ms())
        return result

    def _window(self, query: str) -> int:
        """How many candidates the reranker and the read steps order: `search.candidates`,
        GATHER_WINDOW times more for a question that gathers (its answer is spread over
        many turns, and gathering orders them by what they add). It depends on the query
        alone, never on the cut a caller asks for."""
        window = self.config.search.candidates
        return window * GATHER_WINDOW if self.config.search.excerpts and gathers(query) \
            else window

    def _listed(self, found: list[Pooled], window: int, query: str, query_vec: np.ndarray,
                need: int | None, *, user_id: str, wanted: Mapping[str, Any],
                follow_links: bool, explore: bool, as_of: datetime | None, explain: bool,
                laps: Laps) -> Listed:
        """The one ranked list of `found`: the window reranked and arranged by the read
        steps, then the deeper candidates in retrieval order (for a question that gathers,
        its first `need` hits, or all when None, until `Listed.longer` reads further)."""
        candidates = [MemoryHit(m, float(score), self._text(m), rank)
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
        head = self._arranged(head, query, as_of, steps, query_vec, rows)
        speakers = {s for h in head[WHOLE:] for s in h.memory.speakers}
        longer = None
        if self.config.search.excerpts and gathers(query):  # ordered by what hits carry
            arranged, memo = head, {}

            def order(n: int | None) -> tuple[list[MemoryHit], bool]:
                return gathered_upto(arranged, lambda end: self._excerpted(
                    arranged[:end], speakers, query, query_vec, rows, None, memo), query, n,
                    self.indexes.stemmer)

            head, complete = order(need)
            longer = None if complete else order
            steps.after("gathering", head)
        laps.lap("read steps")
        hits = head if longer else self._with_tail(head, candidates, window)
        return Listed(hits, head, speakers, candidates, rows, ranking, steps, window, longer)

    def _longer(self, listed: Listed, need: int) -> Listed:
        """`listed` with its first `need` hits of a question that gathers ordered."""
        head, complete = listed.longer(need)
        if not complete:
            return replace(listed, hits=head, head=head)
        return replace(listed, hits=self._with_tail(head, listed.candidates, listed.window),
                       head=head, longer=None)

    def _deeper(self, listed: Listed, found: list[Pooled]) -> Listed:
        """`listed` with the candidates of a deeper draw of the same pool (`found`, which
        starts with `listed.candidates`) after its head: the head is the window's, so it
        stays as it was."""
        known = {c.memory.id: c for c in listed.candidates}
        candidates = [known.get(m.id) or MemoryHit(m, float(score), self._text(m), rank)
                      for rank, (m, score, _) in enumerate(found, 1)]
        rows = {**listed.rows, **{m.id: r for m, _, r in found}}
        return replace(listed, hits=self._with_tail(listed.head, candidates, listed.window),
                       candidates=candidates, rows=rows)

    @staticmethod
    def _with_tail(head: list[MemoryHit], candidates: list[MemoryHit],
                   window: int) -> list[MemoryHit]:
        """The head, then the candidates past the window in retrieval order, less those the
        head shows (a linked memory, A-MEM)."""
        shown = {h.memory.id for h in head}
        return [*head, *(c for c in candidates[window:] if c.memory.id not in shown)]

    def _linked(self, user_id: str, head: list[MemoryHit], query_vec: np.ndarray,
                wanted: Mapping[str, Any]) -> list[MemoryHit]:
        """A-MEM: each head hit followed by its linked memories; the head hits they displace
        come right after (deeper candidates they repeat drop out of the tail)."""
        from .links import follow_links as with_links

        linked = [h for h in with_links(self.store, user_id, head, query_vec, k=len(head),
                                        per_hit=self.config.notes.follow, text_of=self._text,
                                        scale=cosine_scale(self.embedder))
                  if matches(h.memory.metadata, wanted)]
        shown = {h.memory.id for h in linked}
        return [*linked, *(h for h in head if h.memory.id not in shown)]

    def _arranged(self, head: list[MemoryHit], query: str, as_of: datetime | None,
                  steps: ReadSteps, query_vec: np.ndarray,
                  rows: Mapping[str, np.ndarray]) -> list[MemoryHit]:
        """The reranked window in the order the read steps leave it: a named time's
        memories up, the latest value first, a successor before what it superseded, the
        asker's own answers before others' news, the newest version of a fact before its
        older ones (`rmm_core.read.versions`), and for a question that gathers, new turns
        first (`docs/concepts.md`)."""
        from .versions import answers_first, closeness, newest_first

        period = named_period(query, as_of or datetime.now(timezone.utc))
        if period is not None:
            head = prefer_period(head, period)
            steps.after("names a time", head)
        if self.config.supersession:
            now = as_of is None and not about_the_past(query)
            if now:
                head = latest_first(head, query,
                                    assistants=self.config.fusion.assistant_speakers)
                steps.after("latest value first", head)
            head = arrange(head, query=query, current_first=now, as_of=as_of)
            steps.after("successor first", head)
            scale = cosine_scale(self.embedder)
            close = closeness(head, query_vec, rows, scale)
            head = answers_first(head, query, close, now=now and period is None,
                                 others=self.config.fusion.assistant_speakers)
            steps.after("answers first", head)
            # a named time asks about then, not now; with an LLM judge, what a new memory
            # changed was read when it was written (`stages.judge_changes`), not guessed here
            if now and period is None:
                head = newest_first(head, query, query_vec, rows,
                                    others=self.config.fusion.assistant_speakers,
                                    guess=not self.config.stages.judge_changes, close=close,
                                    meaning=getattr(self.embedder, "languages", None),
                                    scale=scale)
                steps.after("newest version first", head)
        return head

    def _excerpted(self, hits: list[MemoryHit], speakers: set[str], query: str,
                   query_vec: np.ndarray, rows: Mapping[str, np.ndarray],
                   max_words: int | None,
                   memo: dict[tuple[str, int], MemoryHit] | None = None) -> list[MemoryHit]:
        """Later hits cut to what bears on the query (`rmm_core.read.excerpt`), the names it
        says read among the window's `speakers`; with a budget, only as many hits as it can
        hold are cut (in growing prefixes: the cut of a hit does not depend on the others).
        `memo` keeps each cut by (memory id, place) for a later call on a longer list."""
        memo = {} if memo is None else memo

        def cut(start: int, end: int) -> list[MemoryHit]:
            end = min(end, len(hits))
            first = next((i for i in range(start, end) if (hits[i].memory.id, i) not in memo),
                         end)
            if first < end:
                memo.update(((h.memory.id, i), c) for i, (h, c) in enumerate(zip(
                    hits[first:end], excerpts(hits[first:end], query, query_vec, rows,
                                              self.indexes.stemmer, speakers=speakers,
                                              whole=max(WHOLE - first, 0))), first))
            return [memo[h.memory.id, i] for i, h in enumerate(hits[start:end], start)]

        if max_words is None:
            return cut(0, len(hits))
        upto = -(-max_words // EXCERPT_WORDS) + WHOLE
        done = cut(0, upto)
        while upto < len(hits) and len(within(done, max_words)) == len(done):
            done += cut(upto, 2 * upto)
            upto *= 2
        return [*done, *hits[upto:]]

    def _relevance(self, hits: Sequence[MemoryHit], query: str,
                   close: Mapping[str, float]) -> dict[str, float]:
        """Each hit's relevance (`rmm_core.read.score`), by id, from its candidate's best
        cosine to the query (`close`; a linked hit, A-MEM, is no candidate: its score is
        its cosine) and the query's words it says. It depends on the hit alone, so the
        hits shown are scored first and the other candidates only when read (which then
        needs no vector: a kept result holds none of the index's)."""
        terms = tokenize([query, *(h.memory.text for h in hits)], self.indexes.stemmer,
                         QUESTION_WORDS)
        asked = terms[0]
        return {h.memory.id: max(close[h.memory.id] if h.memory.id in close
                                 else float(np.clip(h.score, 0, 1)), coverage(asked, said))
                for h, said in zip(hits, terms[1:])}

    def _text(self, memory: Memory) -> str:
        return hit_text(memory, dates=self.config.search.context_dates)

    def _pool(self, user_id: str, query: str, wanted: Mapping[str, Any],
              session_id: str | None, as_of: datetime | None, laps: Laps) -> Pool | None:
        """The query's vector and its fused candidates, memories and then the open turns
        they do not cover (None: nothing to search)."""
        # open turns before the index: a turn reflected in between is then in both, and
        # dropped from the open ones below (the other order could miss it in both). The
        # query itself, logged before it is searched for, is no hit.
        opened = [(t, m) for t, m in self.open_turns.open(user_id)
                  if t.session_id != session_id and t.text.strip() != query.strip()
                  and matches(m, wanted)] if self.config.search.immediate_recall else []
        index = None if self.database.wanted(user_id) else self.indexes.get(user_id)
        if index is not None and not len(index) and not opened:
            return None
        laps.lap("open turns")
        query_vec = query_vectors(self.embedder, [query])[0]
        laps.lap("embed")

        def fused(top: int, known: Mapping[str, Pooled]) -> list[Pooled]:
            if index is None:
                found, scale = self._database_candidates(user_id, query, query_vec, top,
                                                         wanted, known)
            else:
                found, scale = self._memory_candidates(user_id, index, query, query_vec, top,
                                                       wanted, known)
            covered = {r for m, _, _ in found for r in m.refs}
            found += [(p.memory, p.score, p.vectors) for p in self.open_turns.score(
                user_id, [(t, m) for t, m in opened if t.id not in covered], query, query_vec,
                self.weights, scale, index.corpus if scale and index is not None else None,
                top)]
            laps.lap("retrieval")
            return sorted(found, key=lambda item: -item[1])[:top]

        return Pool(query_vec, fused, as_of)

    def _memory_candidates(self, user_id: str, index: UserIndex, query: str,
                           query_vec: np.ndarray, top: int, wanted: Mapping[str, Any],
                           known: Mapping[str, Pooled]) -> tuple[list[Pooled], Scale | None]:
        """The fused top memories that match `wanted`, each with its score and vector rows,
        and the scale their signals were z-scored on (None: nothing scored); the memories
        in `known` (an earlier draw's) are not read again."""
        if not len(index):
            return [], None
        subset = np.flatnonzero([matches(m, wanted) for m in index.metadata]) \
            if wanted else None
        found = index.search(query, query_vec, top=top, weights=self.weights, subset=subset)
        ids = [index.ids[p] for p in found.positions]
        decoded = index.decoded  # shared by searches: what they return are copies (_Copies)
        stored = {i: known[i][0] for i in ids if i in known}
        stored.update((i, decoded[i]) for i in ids if i not in stored and i in decoded)
        read = self.store.memories(user_id, [i for i in ids if i not in stored])
        if len(decoded) < DECODED_MOST:
            decoded.update((m.id, m) for m in read)
        stored.update((m.id, m) for m in read)
        # a memory forgotten since the index snapshot was taken drops out
        return [(stored[mid], float(score), index.rows_of(p))
                for mid, p, score in zip(ids, found.positions, found.fused)
                if mid in stored], found.scale

    def _database_candidates(self, user_id: str, query: str, query_vec: np.ndarray, top: int,
                             wanted: Mapping[str, Any], known: Mapping[str, Pooled]
                             ) -> tuple[list[Pooled], Scale | None]:
        """`_memory_candidates` searched inside the database (`search.backend`)."""
        found, scale = self.database.candidates(user_id, query, query_vec, top, wanted)
        new = [mid for mid, _ in found if mid not in known]
        stored = {m.id: m for m in self.store.memories(user_id, new)}
        rows = self.store.memory_vectors(user_id, new)
        for mid, _ in found:
            if mid in known:
                stored[mid], rows[mid] = known[mid][0], known[mid][2]
        return [(stored[mid], score, rows[mid]) for mid, score in found
                if mid in stored and mid in rows], scale

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


def still_holds(hit: MemoryHit, as_of: datetime | None) -> bool:
    """A hit's `current`: not marked an older version by the read steps, and its memory not
    superseded by `as_of` (None: now); a memory changed only in part holds unless the
    question is about the changed part (`validity.arrange` marks it then)."""
    if hit.memory.changed_part is not None:
        return hit.current
    return hit.current and hit.memory.held_at(as_of)


def _first_read(k: int | None, max_words: int | None) -> int | None:
    """How many hits a question that gathers orders first: `k`, or as many as `max_words`
    holds of hits cut to GATHER_WORDS (a budget they leave unfilled reads twice as many);
    None (no cut): all."""
    if max_words is None:
        return k
    fit = -(-max_words // GATHER_WORDS) + WHOLE
    return fit if k is None else min(k, fit)
