"""`ReflectiveMemory`: the front door that wires store, index and reflection together."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import numpy as np

from .agents.workflows import WorkflowMemory
from .agents.working import WorkingContext
from .config import MemoryConfig, unit_words
from .errors import DuplicateTurnError, FeedbackError, InvalidInputError, NotFoundError, RMMError
from .learn.attribute import CitedAnswer, answer_with_citations
from .learn.rerank import LearnedReranker
from .lru import ByteLRU
from .metadata import check_filters, check_metadata, matches
from .models.embed import Embedder, default_embedder
from .models.llm import MeteredLLM, metered, usage_scope
from .read.context import hit_text
from .read.dbsearch import DatabaseSearcher
from .read.index import FusionWeights, Scale, UserIndex, english_stemmer
from .read.provisional import OpenTurns
from .read.scm import Recall, SCMController
from .read.score import relevance, scored
from .storage import open_store
from .storage.base import NewMemory, SessionState, Store
from .types import (
    Memory,
    MemoryHit,
    MemoryVersion,
    SearchResult,
    Turn,
    as_datetime,
    check_id,
    check_query,
    check_unicode,
    new_memory_id,
    utcnow,
)
from .write.compress import Compressor
from .write.extract import Extractor
from .write.pipeline import build_pipeline
from .write.reconcile import Reconciler
from .write.reflect import Pipeline, Reflector
from .write.segment import Segmenter
from .write.units import passages
from .write.worker import ReflectionWorker

TurnLike = Turn | Mapping[str, Any] | tuple[str, str]
Candidate = tuple[Memory, float, np.ndarray]
"""A search candidate before reranking: the memory, its fused score, its vector rows."""
log = logging.getLogger("rmm_core.memory")


class ReflectiveMemory:
    """Long-term memory for one application: many users, each isolated by `user_id`.

    Turns are logged durably the moment they arrive; when a session ends they are
    reflected into memories (prospective reflection); `search` retrieves, fuses and
    reranks them; `feedback` teaches the reranker from what an answer cited.
    """

    def __init__(self, store: Store, *, config: MemoryConfig | None = None,
                 embedder: Embedder | None = None, pipeline: Pipeline | None = None,
                 llm: Any = None, recover: bool = True) -> None:
        """`recover=False` skips reflecting the sessions a crash left open (a reader that
        must not write, or a caller that chooses which sessions to reflect)."""
        self.config = config or MemoryConfig()
        self.store = store
        self.llm = metered(llm, self.config)
        """The user's LLM as every LLM caller uses it: counted, time-bounded, typed errors."""
        self._llm_overrides: OrderedDict[int, tuple[Any, MeteredLLM]] = OrderedDict()
        self.embedder = embedder or default_embedder(self.config.embedding_model)
        self.pipeline = pipeline or default_pipeline(self.config, self.llm)
        self._stemmer = english_stemmer()
        self._weights = FusionWeights(
            self.config.lexical_weight, self.config.dense_weight, self.config.turn_weight,
            self.config.neighbour_smoothing, self.config.assistant_weight,
            frozenset(s.casefold() for s in self.config.assistant_speakers))
        self._cache: ByteLRU[Any] = ByteLRU(cache_budget(self.config))
        """Users' search indexes and reranker weights, in one byte budget."""
        self._index_lock = threading.Lock()
        self._build_locks = [threading.Lock() for _ in range(64)]
        self._reflector = Reflector(store, self.embedder, self.pipeline, self._index,
                                    turn_vectors=self.config.turn_vectors,
                                    memory_vector=self.config.memory_vector,
                                    retry_delay=self.config.reflection_retry_delay,
                                    unit_words=unit_words(self.config))
        if self.config.notes:  # A-MEM notes and links after each reflection commit
            from .agents.notes import keeper_for

            self._reflector.after_commit = keeper_for(store, self.embedder, self.config,
                                                      self.llm)
        self._database = DatabaseSearcher(store, self._weights, self.config.search_backend)
        self._reranker = LearnedReranker(store, self.config, cache=self._cache)
        self._open_turns = OpenTurns(store, self.embedder, unit_words=unit_words(self.config),
                                     stemmer=self._stemmer)
        self._last_sweep: dict[str, float] = {}
        _check_dimension(store, self.embedder)
        if not store.read_only:
            self._database.prepare(getattr(self.embedder, "dim", None))
        self._worker: ReflectionWorker | None = None
        if store.read_only:  # a read-only store is searched as it is
            return
        if self.config.background_reflection:  # its first sweep does what open() did
            self._worker = ReflectionWorker(self._sweep, self.config.reflection_interval)
            self._worker.start()
        elif recover:
            self.reflect_pending()

    # construction --------------------------------------------------------------------------
    @classmethod
    def open(cls, target: str | Store = ":memory:", *, llm: Any = None,
             config: MemoryConfig | Mapping[str, Any] | None = None,
             embedder: Embedder | None = None, segmenter: Segmenter | None = None,
             extractor: Extractor | None = None, compressor: Compressor | None = None,
             reconciler: Reconciler | None = None, recover: bool = True,
             **settings: Any) -> ReflectiveMemory:
        """Open (or create) a memory at a file path, `:memory:`, or a database URL.

        `settings` are `MemoryConfig` fields; stage arguments replace single stages.
        Open sessions left unreflected by a crash are reflected here (`recover=False`: not).
        """
        if isinstance(config, Mapping):
            config = MemoryConfig(**config)
        config = config or MemoryConfig()
        if settings:
            config = MemoryConfig(**{**config.model_dump(), **settings})
        llm = metered(llm, config)
        pipeline = default_pipeline(config, llm)
        for name, stage in (("segmenter", segmenter), ("extractor", extractor),
                            ("compressor", compressor), ("reconciler", reconciler)):
            if stage is not None:
                setattr(pipeline, name, stage)
        if isinstance(target, Store):
            return cls(target, config=config, embedder=embedder, pipeline=pipeline, llm=llm,
                       recover=recover)
        store = open_store(target, synchronous=config.synchronous)
        try:
            return cls(store, config=config, embedder=embedder, pipeline=pipeline, llm=llm,
                       recover=recover)
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        """Stop the background worker (a reflection under way finishes), log any batched
        reranker steps, close the store."""
        if self._worker is not None:
            self._worker.stop()
        self._reranker.flush()
        self.store.close()

    def __enter__(self) -> ReflectiveMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # write path ----------------------------------------------------------------------------
    def append(self, turns: Sequence[TurnLike] | TurnLike, *, user_id: str,
               session_id: str, started_at: datetime | str | float | None = None,
               metadata: Mapping[str, Any] | None = None, agent_id: str | None = None,
               run_id: str | None = None) -> list[Turn]:
        """Log turns durably, at once; reflection waits for the session to end.

        `metadata` (with `agent_id`/`run_id`) is the session's, set by its first append and
        given to every memory reflected from it. A reflection this call triggers (size
        limit, idle sessions) never makes it fail: a failed one is recorded on its session
        and retried later.
        """
        user_id = check_id(user_id, "user_id")
        session_id = check_id(session_id, "session_id")
        batch = _coerce_turns(turns)
        meta = None if metadata is None and agent_id is None and run_id is None else \
            check_metadata(metadata, agent_id=agent_id, run_id=run_id)
        stored = self.store.append_turns(user_id, session_id, batch,
                                         as_datetime(started_at, "started_at"), time.time(),
                                         meta)
        state = self.store.session(user_id, session_id)
        limit = self.config.session_max_turns
        if limit and state and state.n_turns - state.reflected >= limit and \
                state.failures < self.config.reflection_max_attempts:
            self._reflect_quietly(state)
        if self._worker is None:  # the worker reflects idle sessions, else the caller's own
            self._sweep_idle(user_id)
        return stored

    def end_session(self, *, user_id: str, session_id: str, wait: bool = True
                    ) -> list[Memory]:
        """End a session and run prospective reflection on it now (`wait=False`: only mark
        it ended, for the background worker or `reflect_pending`, and return []).

        LLM failures fall back to the LLM-free stages. Any other failure is recorded on the
        session (retried later, see `reflection_max_attempts`) and raised: an `RMMError`, or
        `ReflectionError` wrapping what the failing stage raised. The turns stay stored.
        """
        user_id = check_id(user_id, "user_id")
        session_id = check_id(session_id, "session_id")
        if not self.store.mark_ended(user_id, session_id):
            raise InvalidInputError(f"no session {session_id!r} for this user")
        if not wait:
            if self._worker is not None:
                self._worker.wake()
            return []
        state = self.store.session(user_id, session_id)
        return self._reflector.reflect(state) if state else []

    def add_session(self, turns: Sequence[TurnLike], *, user_id: str,
                    session_id: str | None = None,
                    started_at: datetime | str | float | None = None,
                    metadata: Mapping[str, Any] | None = None, agent_id: str | None = None,
                    run_id: str | None = None) -> list[Memory]:
        """Append a whole session and reflect it; returns the memories added or merged.

        Adding again turns that are all stored already, with the same ids, speakers and texts,
        is a no-op returning `[]` (a script run twice); a reused id with other words raises.
        """
        if not isinstance(turns, Sequence) or isinstance(turns, (str, bytes)) or not turns:
            raise InvalidInputError("add_session needs a non-empty list of turns")
        session_id = session_id if session_id is not None else uuid.uuid4().hex
        try:
            self.append(turns, user_id=user_id, session_id=session_id, started_at=started_at,
                        metadata=metadata, agent_id=agent_id, run_id=run_id)
        except DuplicateTurnError:
            if _all_stored(self.store, user_id, _coerce_turns(turns)):
                return []
            raise
        return self.end_session(user_id=user_id, session_id=session_id)

    def add(self, content: str | Sequence[TurnLike], *, user_id: str,
            metadata: Mapping[str, Any] | None = None, agent_id: str | None = None,
            run_id: str | None = None) -> list[Memory]:
        """Remember a fact (a string) at once, or a conversation (a list of messages in any
        `Turn.coerce` form), logged as a new session and reflected now.

        A fact is embedded and indexed as it is, without an LLM and without a logged turn:
        its first version has `source="direct"` and its refs are empty. A fact longer than a
        hit may hold (`max_hit_words`) becomes one memory per passage of whole sentences.
        """
        user_id = check_id(user_id, "user_id")
        meta = check_metadata(metadata, agent_id=agent_id, run_id=run_id)
        if not isinstance(content, str):
            return self.add_session(content, user_id=user_id, metadata=meta)
        fact = Turn.coerce({"speaker": "user", "text": content})
        texts = [p.text for p in passages(fact, unit_words(self.config))]
        keys = self.pipeline.compressor.compress(texts)
        vectors = self.embedder.embed(texts)
        now = utcnow()
        added = [NewMemory(Memory(id=new_memory_id(), user_id=user_id, text=text,
                                  key=key or text, refs=[], speakers=["user"], occurred_at=now,
                                  created_at=now, updated_at=now, attrs={"source": "direct"},
                                  metadata=meta), vector[None, :])
                 for text, key, vector in zip(texts, keys, vectors)]
        return self.store.add_memories(user_id, added, source="direct")

    def get(self, memory_id: str, *, user_id: str) -> Memory:
        """One memory of the user, with its versions; `NotFoundError` if there is none."""
        user_id = check_id(user_id, "user_id")
        found = self.store.memories(user_id, [check_id(memory_id, "memory_id")])
        if not found:
            raise NotFoundError(f"no memory {memory_id!r} for this user")
        return found[0]

    def update(self, memory_id: str, text: str, *, user_id: str,
               metadata: Mapping[str, Any] | None = None) -> Memory:
        """Replace what a memory says: a new version (reason `update`), re-embedded and
        re-keyed; its refs (where it came from) stay. `metadata` keys are set on top of the
        memory's own (None keeps them)."""
        current = self.get(memory_id, user_id=user_id)
        text = Turn.coerce({"speaker": "user", "text": text}).text
        meta = check_metadata({**current.metadata, **(metadata or {})}) \
            if metadata is not None else current.metadata
        key = self.pipeline.compressor.compress([text])[0] or text
        vector = self.embedder.embed([text])[0]
        return self.store.update_memory(current.user_id, current.id, text, key,
                                        vector[None, :], meta)

    def delete(self, memory_id: str, *, user_id: str) -> None:
        """Delete a memory with its versions and vectors (gone from search at once); the raw
        turns it came from stay in the log (`forget` erases a user's log)."""
        self.store.delete_memory(check_id(user_id, "user_id"), check_id(memory_id, "memory_id"))

    def history(self, memory_id: str, *, user_id: str) -> list[MemoryVersion]:
        """A memory's versions, oldest first: created, merged into, updated."""
        return self.get(memory_id, user_id=user_id).versions

    def add_sessions(self, sessions: Iterable[Mapping[str, Any]], *, user_id: str,
                     progress: bool | None = None) -> list[Memory]:
        """Ingest many sessions (dicts of `add_session` arguments) with a progress bar."""
        from tqdm.auto import tqdm

        sessions = list(sessions)
        show = self.config.progress if progress is None else progress
        out: list[Memory] = []
        for session in tqdm(sessions, desc="reflecting sessions", unit="session",
                            disable=None if show is None else not show):
            out += self.add_session(user_id=user_id, **session)
        return out

    def reflect_pending(self, *, all_open: bool = False,
                        retry_failed: bool = False) -> list[Memory]:
        """Reflect sessions that ended (or idled out) without finishing their reflection.

        A session whose reflection fails is recorded and skipped; it is retried after
        `reflection_retry_delay` (doubling) up to `reflection_max_attempts` failures in
        all (`retry_failed=True` tries every such session now). Never raises for one
        session's failure.
        """
        return self._reflect_pending(all_open=all_open, retry_failed=retry_failed)

    def _reflect_pending(self, *, user_id: str | None = None, all_open: bool = False,
                         retry_failed: bool = False,
                         stopping: Callable[[], bool] = lambda: False) -> list[Memory]:
        """`reflect_pending` for every user or one, until `stopping()` (checked between
        sessions) turns true."""
        timeout = self.config.session_idle_timeout
        idle_before = time.time() - timeout if timeout else None
        if all_open:
            idle_before = float("inf")
        limit = None if retry_failed else self.config.reflection_max_attempts
        out: list[Memory] = []
        for state in self.store.pending_sessions(idle_before, user_id, max_failures=limit):
            if stopping():
                break
            out += self._reflect_quietly(state)
        return out

    def _sweep(self, stopping: Callable[[], bool]) -> None:
        """The background worker's round: every user's ended and idle sessions."""
        self._reflect_pending(stopping=stopping)

    def _reflect_quietly(self, state: SessionState) -> list[Memory]:
        """Reflect a session for someone other than its explicit `end_session` caller: a
        failure is already recorded on the session and logged, not raised."""
        try:
            return self._reflector.reflect(state)
        except RMMError as exc:
            log.warning("reflection of session %r failed (attempt %d): %s",
                        state.session_id, state.failures + 1, exc)
            return []

    def _sweep_idle(self, user_id: str) -> None:
        """Reflect the caller's own ended or idle sessions (checked at most once a minute per
        user): a request never pays for another user's sessions, which wait for the worker
        or `reflect_pending`."""
        timeout = self.config.session_idle_timeout
        now = time.time()
        if timeout and now - self._last_sweep.get(user_id, 0.0) > min(timeout, 60.0):
            with self._index_lock:
                self._last_sweep[user_id] = now
                while len(self._last_sweep) > 10_000:
                    self._last_sweep.pop(next(iter(self._last_sweep)))
            self._reflect_pending(user_id=user_id)

    # read path ------------------------------------------------------------------------------
    def search(self, query: str, *, user_id: str, k: int = 5,
               follow_links: bool = False, explore: bool = False,
               filters: Mapping[str, Any] | None = None, agent_id: str | None = None,
               run_id: str | None = None, session_id: str | None = None,
               min_score: float | None = None) -> SearchResult:
        """Retrieve top-K candidates (dense + BM25, fused), rerank, return the best `k`.

        Turns not yet reflected are candidates too, as provisional hits (`immediate_recall`),
        except those of `session_id`: the caller's current conversation, which its context
        holds already. `filters` keep memories whose metadata has each key with that value
        (a list: any of them); `agent_id`/`run_id` are filters on those keys.

        A hit's `score` is its relevance in [0, 1] (see `rmm_core.read.score`); `min_score` drops
        the hits below it, so fewer than `k` (or none) may come back.

        `follow_links` (A-MEM, needs `notes=True`) puts each hit's linked memories right
        after it, within the same `k`. `explore` samples the kept `k` (Gumbel noise, softmax
        temperature `reranker_temperature`) so that `feedback` can learn.
        """
        user_id = check_id(user_id, "user_id")
        query = check_query(query, self.config.max_query_chars)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidInputError(f"k must be a positive integer, got {k!r}")
        wanted = check_filters(filters, agent_id=agent_id, run_id=run_id)
        session_id = check_id(session_id, "session_id", optional=True)
        if min_score is not None and (isinstance(min_score, bool) or not isinstance(
                min_score, (int, float)) or not 0.0 <= min_score <= 1.0):
            raise InvalidInputError(f"min_score must be a number in [0, 1], got {min_score!r}")
        result = SearchResult(uuid.uuid4().hex, query, user_id, [])
        if not query.strip():
            return result
        # open turns before the index: a turn reflected in between is then in both, and
        # dropped from the open ones below (the other order could miss it in both). The
        # query itself, logged before it is searched for, is no hit.
        opened = [(t, m) for t, m in self._open_turns.open(user_id)
                  if t.session_id != session_id and t.text.strip() != query.strip()
                  and matches(m, wanted)] if self.config.immediate_recall else []
        index = None if self._database.wanted(user_id) else self._index(user_id)
        if index is not None and not len(index) and not opened:
            return result
        query_vec = self.embedder.embed([query])[0]
        top = max(k, self.config.candidates)
        if index is None:
            found, scale = self._database_candidates(user_id, query, query_vec, top, wanted)
        else:
            found, scale = self._memory_candidates(user_id, index, query, query_vec, top,
                                                   wanted)
        covered = {r for m, _, _ in found for r in m.refs}
        found += [(p.memory, p.score, p.vectors) for p in self._open_turns.score(
            user_id, [(t, m) for t, m in opened if t.id not in covered], query, query_vec,
            self._weights, scale, index.corpus if scale and index is not None else None, top)]
        found = sorted(found, key=lambda item: -item[1])[:top]
        candidates = [MemoryHit(m, float(score), hit_text(m, dates=self.config.context_dates),
                                rank) for rank, (m, score, _) in enumerate(found)]
        result.candidates = candidates
        rows = [r for _, _, r in found]
        result.hits, ranking = self._reranker.rerank(user_id, query_vec, candidates, rows, k,
                                                     explore=explore, query=query)
        if follow_links:
            from .read.links import follow_links as with_links

            top = {h.memory.id for h in result.hits}
            result.hits = with_links(
                self.store, user_id, [*result.hits, *(c for c in candidates
                                                      if c.memory.id not in top)],
                query_vec, k=k, per_hit=self.config.note_follow,
                text_of=lambda m: hit_text(m, dates=self.config.context_dates))
            result.hits = [h for h in result.hits if matches(h.memory.metadata, wanted)]
        result.hits = scored(result.hits, {c.memory.id: relevance(query_vec, r)
                                           for c, r in zip(candidates, rows)}, min_score)
        result.state = {"query_vec": query_vec, "ranking": ranking}
        return result

    def _memory_candidates(self, user_id: str, index: UserIndex, query: str,
                           query_vec: np.ndarray, top: int,
                           wanted: Mapping[str, Any]) -> tuple[list[Candidate], Scale | None]:
        """The fused top memories that match `wanted`, each with its score and vector rows,
        and the scale their signals were z-scored on (None: nothing scored)."""
        if not len(index):
            return [], None
        subset = np.flatnonzero([matches(m, wanted) for m in index.metadata]) \
            if wanted else None
        found = index.search(query, query_vec, top=top, weights=self._weights, subset=subset)
        stored = {m.id: m for m in self.store.memories(
            user_id, [index.ids[p] for p in found.positions])}
        # a memory forgotten since the index snapshot was taken drops out
        return [(stored[index.ids[p]], float(score), index.rows_of(p))
                for p, score in zip(found.positions, found.fused)
                if index.ids[p] in stored], found.scale

    def _database_candidates(self, user_id: str, query: str, query_vec: np.ndarray, top: int,
                             wanted: Mapping[str, Any]
                             ) -> tuple[list[Candidate], Scale | None]:
        """`_memory_candidates` searched inside the database (`search_backend`)."""
        found, scale = self._database.candidates(user_id, query, query_vec, top, wanted)
        ids = [mid for mid, _ in found]
        stored = {m.id: m for m in self.store.memories(user_id, ids)}
        rows = self.store.memory_vectors(user_id, ids)
        return [(stored[mid], score, rows[mid]) for mid, score in found
                if mid in stored and mid in rows], scale

    def feedback(self, result: SearchResult, cited: Sequence[str]) -> None:
        """One REINFORCE step from the memories an answer cited (retrospective reflection).

        `cited` holds memory ids (or hits) among `result`'s hits; none cited = all -1.
        A result takes feedback once; a second call raises `FeedbackError`.
        """
        self._reranker.feedback(result, cited)

    def respond(self, query: str, *, user_id: str, llm: Any = None, k: int = 5,
                explore: bool = True) -> CitedAnswer:
        """Search, answer with numbered-memory citations, and learn from them (RMM's loop).

        Exploration is on by default because the answer's citations train the reranker.
        """
        model = self._llm_for(llm)
        if model is None:
            raise InvalidInputError("respond needs an llm (argument or ReflectiveMemory's llm)")
        result = self.search(query, user_id=user_id, k=k, explore=explore)
        with self._usage_for(user_id):
            answer = answer_with_citations(model, query, result)
        if result.hits:
            try:
                self.feedback(result, answer.cited_ids)
            except FeedbackError as exc:  # the answer stands; only its learning step is refused
                warnings.warn(str(exc), RuntimeWarning, stacklevel=2)
        return answer

    def rerank_texts(self, query: str, texts: Sequence[str], *, user_id: str,
                     memory_ids: Sequence[str | None] | None = None) -> list[float]:
        """RMM's learned score q'.m' of arbitrary texts for `query` (framework rerankers call
        this); a text whose memory id is this user's is scored by that memory's stored rows."""
        user_id = check_id(user_id, "user_id")
        query = check_query(query, self.config.max_query_chars)
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise InvalidInputError("rerank_texts needs a query string and a list of strings")
        texts = [check_unicode(t, "text") for t in texts]
        ids = list(memory_ids) if memory_ids is not None else [None] * len(texts)
        if len(ids) != len(texts):
            raise InvalidInputError("memory_ids must be as long as texts")
        if not texts:
            return []
        stored = self.store.memory_vectors(user_id, [i for i in ids if i is not None])
        missing = [t for t, i in zip(texts, ids) if i not in stored]
        fresh = iter(self.embedder.embed([query, *missing]))
        query_vec = next(fresh)
        return self._reranker.learned_scores(
            user_id, query_vec, [stored[i] if i in stored else next(fresh)[None, :] for i in ids],
            query=query, texts=texts)

    def recall(self, query: str, *, user_id: str, previous_turn: str | Turn | None = None,
               budget: int | None = None, k: int | None = None,
               controller: SCMController | None = None) -> Recall:
        """SCM read path: gate (is memory needed?), search, then build a context within
        `budget` (raw turns or summaries, previous turn always kept); says what and why."""
        controller = controller or SCMController.for_llm(self.llm)
        query = check_query(query, self.config.max_query_chars)
        with self._usage_for(user_id):
            return controller.recall(self, query, user_id=user_id,
                                     previous_turn=previous_turn, budget=budget, k=k,
                                     dates=self.config.context_dates)

    def best_similarity(self, query: str, *, user_id: str) -> float:
        """The best cosine of any of the user's memories to `query` (0 when none): one
        embedding and one nearest-neighbour look-up, no BM25 or rerank (SCM's gate probe)."""
        index = self._index(check_id(user_id, "user_id"))
        if not len(index):
            return 0.0
        found = index.dense_scores(self.embedder.embed([query])[0], 1)
        return max(found.values(), default=0.0)

    def working_context(self, *, user_id: str, **options: Any) -> WorkingContext:
        """The user's MemGPT-style working context: core blocks and a bounded message queue
        (options: `WorkingContext` settings such as `budget`, `session_id`, `blocks`)."""
        return WorkingContext(user_id, append=self.append, state=self.store, llm=self.llm,
                              usage_for=self._usage_for, **options)

    def turns(self, *, user_id: str, session_id: str | None = None) -> list[Turn]:
        """The durable raw log of a user (or one session), each turn with its session_id."""
        user_id = check_id(user_id, "user_id")
        session_id = check_id(session_id, "session_id", optional=True)
        return self.store.turns(user_id, session_id)

    def memories(self, *, user_id: str) -> list[Memory]:
        """Every memory of a user, with provenance and version history."""
        return self.store.memories(check_id(user_id, "user_id"))

    def forget(self, *, user_id: str) -> None:
        """Delete every turn, session, memory, version and vector of the user, their
        workflows, working context and own reranker weights, in one transaction."""
        user_id = check_id(user_id, "user_id")
        self._reranker.forget(user_id)
        self.store.forget(user_id)
        self._cache.pop(_index_key(user_id))

    @property
    def workflows(self) -> WorkflowMemory:
        """Agent Workflow Memory on this store, with this memory's embedder and LLM."""
        if getattr(self, "_workflows", None) is None:
            self._workflows = WorkflowMemory(self.store, self.embedder, llm=self.llm)
        return self._workflows

    def usage(self, *, user_id: str | None = None) -> dict[str, int]:
        """LLM calls and tokens spent for users (reflection, notes, respond, recall, working
        context, workflows); `sessions` counts the sessions reflected with the LLM."""
        return self.store.usage(check_id(user_id, "user_id", optional=True))

    def _usage_for(self, user_id: str) -> AbstractContextManager[dict[str, int]]:
        """Add the LLM usage of the work inside to `user_id`'s (outside any session)."""
        user_id = check_id(user_id, "user_id")
        return usage_scope(save=lambda tally: self.store.add_usage(user_id, "", tally))

    def _llm_for(self, llm: Any) -> MeteredLLM | None:
        """This memory's LLM, or a per-call one metered once (the last few are kept, so a
        hung one cannot start threads without bound)."""
        if llm is None or llm is self.llm:
            return self.llm
        with self._index_lock:
            if id(llm) not in self._llm_overrides:
                self._llm_overrides[id(llm)] = (llm, metered(llm, self.config))
                while len(self._llm_overrides) > 4:
                    self._llm_overrides.popitem(last=False)
            self._llm_overrides.move_to_end(id(llm))
            return self._llm_overrides[id(llm)][1]

    # async twins -------------------------------------------------------------------------------
    async def aappend(self, turns: Sequence[TurnLike] | TurnLike, **kw: Any) -> list[Turn]:
        return await asyncio.to_thread(self.append, turns, **kw)

    async def aend_session(self, **kw: Any) -> list[Memory]:
        return await asyncio.to_thread(self.end_session, **kw)

    async def aadd_session(self, turns: Sequence[TurnLike], **kw: Any) -> list[Memory]:
        return await asyncio.to_thread(self.add_session, turns, **kw)

    async def asearch(self, query: str, **kw: Any) -> SearchResult:
        return await asyncio.to_thread(self.search, query, **kw)

    async def afeedback(self, result: SearchResult, cited: Sequence[str]) -> None:
        return await asyncio.to_thread(self.feedback, result, cited)

    async def arespond(self, query: str, **kw: Any) -> CitedAnswer:
        return await asyncio.to_thread(self.respond, query, **kw)

    async def aadd(self, content: str | Sequence[TurnLike], **kw: Any) -> list[Memory]:
        return await asyncio.to_thread(self.add, content, **kw)

    async def aget(self, memory_id: str, **kw: Any) -> Memory:
        return await asyncio.to_thread(self.get, memory_id, **kw)

    async def aupdate(self, memory_id: str, text: str, **kw: Any) -> Memory:
        return await asyncio.to_thread(self.update, memory_id, text, **kw)

    async def adelete(self, memory_id: str, **kw: Any) -> None:
        return await asyncio.to_thread(self.delete, memory_id, **kw)

    async def ahistory(self, memory_id: str, **kw: Any) -> list[MemoryVersion]:
        return await asyncio.to_thread(self.history, memory_id, **kw)

    async def aturns(self, **kw: Any) -> list[Turn]:
        return await asyncio.to_thread(self.turns, **kw)

    async def amemories(self, **kw: Any) -> list[Memory]:
        return await asyncio.to_thread(self.memories, **kw)

    async def aforget(self, **kw: Any) -> None:
        return await asyncio.to_thread(self.forget, **kw)

    # internals ---------------------------------------------------------------------------------
    def _index(self, user_id: str) -> UserIndex:
        """The user's index as of the store's generation for them: the cached one, brought
        up to date with what changed since (`UserIndex.apply`), or built afresh."""
        generation = self.store.generation(user_id)
        key = _index_key(user_id)
        cached = self._cache.get(key)
        if cached is not None and cached.generation == generation:
            return cached
        # one thread updates or builds a user's index; the others then find it done
        with self._build_locks[hash(user_id) % len(self._build_locks)]:
            cached = self._cache.get(key)
            if cached is not None and cached.generation == generation:
                return cached
            index = None
            if cached is not None:
                delta = self.store.index_changes(user_id, cached.generation)
                index = cached.apply(delta) if delta is not None else None
            if index is None:
                index = UserIndex(self.store.index_data(user_id), self._stemmer,
                                  trained=cached)
            self._cache.put(key, index, index.nbytes)
        return index


def _index_key(user_id: str) -> str:
    """The cache key of a user's index (reranker weights are cached under their names)."""
    return f"index:{user_id}"


def cache_budget(config: MemoryConfig) -> int:
    """`cache_bytes`, capped by the deprecated `reranker_cache_bytes` when that was changed."""
    default = MemoryConfig.model_fields["reranker_cache_bytes"].default
    if config.reranker_cache_bytes != default:
        return min(config.cache_bytes, config.reranker_cache_bytes)
    return config.cache_bytes


def _check_dimension(store: Store, embedder: Embedder) -> None:
    """Refuse an embedder whose vectors cannot be compared with the stored ones."""
    stored, dim = store.vector_dim(), getattr(embedder, "dim", None)
    if stored is not None and dim is not None and stored != dim:
        name = getattr(embedder, "name", type(embedder).__name__)
        raise InvalidInputError(
            f"this memory's vectors have {stored} dimensions but the embedder {name} makes "
            f"{dim}: open it with the embedding_model it was built with")


def default_pipeline(config: MemoryConfig, llm: Any = None) -> Pipeline:
    """The write path the config asks for: LLM-free (TextTiling segments, raw-turn memories,
    filler-free keys) without an LLM, the papers' LLM stages with one (`pipeline.STAGES`)."""
    return build_pipeline(config, llm)


def _all_stored(store: Store, user_id: str, turns: list[Turn]) -> bool:
    """Whether every turn has an id already stored for the user with the same words."""
    stored = {t.id: t for t in store.turns(user_id)}
    return all(t.id in stored and (stored[t.id].speaker, stored[t.id].text) == (t.speaker, t.text)
               for t in turns)


def _coerce_turns(turns: Sequence[TurnLike] | TurnLike) -> list[Turn]:
    if isinstance(turns, (Turn, Mapping)) or (
            isinstance(turns, tuple) and len(turns) == 2 and all(isinstance(x, str)
                                                                 for x in turns)):
        turns = [turns]  # one message; a (role, text) tuple is one message too
    if isinstance(turns, (str, bytes)) or not isinstance(turns, (Sequence, Iterable)):
        raise InvalidInputError(f"turns must be a list of Turn or dict, not {type(turns).__name__}")
    batch = [Turn.coerce(t) for t in turns]
    if not batch:
        raise InvalidInputError("no turns given")
    return batch

