"""`ReflectiveMemory`: the front door that wires store, index and reflection together."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from .agents.workflows import WorkflowMemory
from .agents.working import WorkingContext
from .config import MemoryConfig, nest, unit_words
from .errors import InvalidInputError, NotFoundError
from .learn.attribute import CitedAnswer, cite_and_learn
from .learn.rerank import LearnedReranker
from .metadata import check_filters, check_metadata
from .models.embed import Embedder, default_embedder
from .models.embed_adapters import as_embedder
from .models.embed_choice import ChosenEmbedder, chosen_for
from .models.embed_identity import check_embedder
from .models.llm import metered, usage_scope
from .models.per_call import PerCallLLMs
from .read.checks import check_min_score, check_texts
from .read.scm import Recall, SCMController
from .read.wiring import searcher_for
from .storage import open_store
from .storage.base import Store
from .twins import in_thread
from .types import (
    Memory,
    MemoryVersion,
    SearchResult,
    Turn,
    as_datetime,
    check_count,
    check_id,
    check_query,
)
from .write.compress import Compressor
from .write.extract import Extractor
from .write.facts import fact_memories, rewritten
from .write.ingest import TurnLike
from .write.pipeline import build_pipeline
from .write.reconcile import Reconciler
from .write.reflect import Pipeline
from .write.repeats import add_key
from .write.segment import Segmenter
from .write.wiring import ingestor_for


class ReflectiveMemory:
    """Long-term memory for one application: many users, each isolated by `user_id`.

    Turns are logged durably the moment they arrive; when a session ends they are
    reflected into memories (prospective reflection); `search` retrieves, fuses and
    reranks them; `feedback` teaches the reranker from what an answer cited.
    """

    def __init__(self, store: Store, *, config: MemoryConfig | None = None,
                 embedder: Embedder | Any = None, pipeline: Pipeline | None = None,
                 llm: Any = None, recover: bool = True) -> None:
        """`recover=False` skips reflecting the sessions a crash left open (a reader that
        must not write, or a caller that chooses which sessions to reflect). `embedder` is
        as in `open`."""
        self.config = config or MemoryConfig()
        self.store = store
        self.llm = metered(llm, self.config)
        """The user's LLM as every LLM caller uses it: counted, time-bounded, typed errors."""
        self._llms = PerCallLLMs(self.llm, self.config)
        if embedder is not None:
            self.embedder = as_embedder(embedder)
        elif self.config.embedding.model is None:  # the store's, or its first texts'
            self.embedder = chosen_for(store)
        else:
            self.embedder = default_embedder(self.config.embedding.model)
        self.pipeline = pipeline or build_pipeline(self.config, self.llm)
        self._search = searcher_for(store, self.embedder, self.config)
        self._ingest = ingestor_for(store, self.config, self.embedder, self.pipeline, self.llm,
                                    index_for=self._search.indexes.get,
                                    similar=self._search.similar)
        if not isinstance(self.embedder, ChosenEmbedder):  # it checks what it chooses
            check_embedder(store, self.embedder)
        if store.read_only:  # a read-only store is searched as it is
            return
        self._search.database.prepare(getattr(self.embedder, "dim", None))
        if self.config.sessions.background_reflection:  # its first sweep does what open() did
            self._ingest.start_worker()
        elif recover:
            self.reflect_pending()

    # construction --------------------------------------------------------------------------
    @classmethod
    def open(cls, target: str | Store = ":memory:", *, llm: Any = None,
             config: MemoryConfig | Mapping[str, Any] | None = None,
             embedder: Embedder | Any = None, segmenter: Segmenter | None = None,
             extractor: Extractor | None = None, compressor: Compressor | None = None,
             reconciler: Reconciler | None = None, recover: bool = True,
             **settings: Any) -> ReflectiveMemory:
        """Open (or create) a memory at a file path, `:memory:`, or a database URL.

        `settings` are `MemoryConfig` groups or dotted names (`**{"reranker.kind": "rmm"}`,
        `search={"candidates": 40}`), applied over `config`; stage arguments replace single
        stages. `embedder` replaces `embedding.model`: an `Embedder`, a LangChain `Embeddings`
        or a LlamaIndex `BaseEmbedding` (as it is); a store keeps the dimension it was built with.
        Open sessions left unreflected by a crash are reflected here (`recover=False`: not).
        """
        if isinstance(config, Mapping):
            config = MemoryConfig.model_validate(nest(config, stacklevel=2))
        config = config or MemoryConfig()
        if settings:
            config = config.updated(**nest(settings, stacklevel=2))
        llm = metered(llm, config)
        pipeline = build_pipeline(config, llm, segmenter=segmenter, extractor=extractor,
                                  compressor=compressor, reconciler=reconciler)
        if isinstance(target, Store):
            return cls(target, config=config, embedder=embedder, pipeline=pipeline, llm=llm,
                       recover=recover)
        store = open_store(target, synchronous=config.storage.synchronous)
        try:
            return cls(store, config=config, embedder=embedder, pipeline=pipeline, llm=llm,
                       recover=recover)
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        """Stop the background worker (a reflection under way finishes), log any batched
        reranker steps, close the store."""
        self._ingest.stop()
        self._search.reranker.flush()
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
        logged = self._ingest.append(turns, user_id=user_id, session_id=session_id,
                                     started_at=started_at, metadata=metadata,
                                     agent_id=agent_id, run_id=run_id)
        if isinstance(self.embedder, ChosenEmbedder):  # by the first turns that tell
            self.embedder.choose([t.text for t in logged], wait=True)
        return logged

    def end_session(self, *, user_id: str, session_id: str, wait: bool = True
                    ) -> list[Memory]:
        """End a session and run prospective reflection on it now (`wait=False`: only mark
        it ended, for the background worker or `reflect_pending`, and return []).

        LLM failures fall back to the LLM-free stages. Any other failure is recorded on the
        session (retried later, see `sessions.reflection_max_attempts`) and raised: an
        `RMMError`, or `ReflectionError` wrapping what the failing stage raised. The turns
        stay stored.
        """
        return self._ingest.end_session(user_id=user_id, session_id=session_id, wait=wait)

    def add_session(self, turns: Sequence[TurnLike], *, user_id: str,
                    session_id: str | None = None,
                    started_at: datetime | str | float | None = None,
                    metadata: Mapping[str, Any] | None = None, agent_id: str | None = None,
                    run_id: str | None = None) -> list[Memory]:
        """Append a whole session and reflect it; returns the memories added or merged.

        Adding a session stored already is a no-op returning `[]` (a script run twice, a
        client retrying): turns whose ids are stored with the same speakers and texts, or
        turns given without ids that the session holds already. A session given no
        `session_id` is named by its content (turns, metadata, `started_at`), so the same
        one added twice is one. A reused turn id with other words raises.
        """
        return self._ingest.add_session(turns, user_id=user_id, session_id=session_id,
                                        started_at=started_at, metadata=metadata,
                                        agent_id=agent_id, run_id=run_id)

    def add(self, content: str | Sequence[TurnLike], *, user_id: str,
            metadata: Mapping[str, Any] | None = None, agent_id: str | None = None,
            run_id: str | None = None, occurred_at: datetime | str | None = None
            ) -> list[Memory]:
        """Remember a fact (a string) at once, or a conversation (a list of messages in any
        `Turn.coerce` form), logged as a new session and reflected now.

        A fact is embedded and indexed as it is, without an LLM and without a logged turn:
        its first version has `source="direct"` and its refs are empty. A fact longer than a
        hit may hold (`search.max_hit_words`) becomes one memory per passage of whole sentences.
        `occurred_at` is when it was said (default now; for a conversation, when it began);
        an earlier memory it changes is marked superseded as of then (`supersession`).

        The write is idempotent: the same content for the same user, metadata (scopes
        included) and `occurred_at` (or none given) is stored once. Adding a fact again
        returns the memories the first add stored, as they are now; a conversation again
        adds nothing and returns [] (`add_session`).
        """
        user_id = check_id(user_id, "user_id")
        meta = check_metadata(metadata, agent_id=agent_id, run_id=run_id)
        occurred_at = as_datetime(occurred_at, "occurred_at")
        if not isinstance(content, str):
            return self.add_session(content, user_id=user_id, metadata=meta,
                                    started_at=occurred_at)
        added = fact_memories(content, user_id=user_id, metadata=meta,
                              words=unit_words(self.config), occurred_at=occurred_at,
                              compressor=self.pipeline.compressor, embedder=self.embedder,
                              key=add_key(user_id, content, meta, occurred_at))
        made = {m.id: m for m in self._superseding(
            user_id, self.store.add_memories(user_id, added, source="direct"))}
        ids = [new.memory.id for new in added]
        if len(made) < len(ids):  # a repeat: what the same add stored before
            made.update((m.id, m) for m in self.store.memories(
                user_id, [i for i in ids if i not in made]))
        return [made[i] for i in ids if i in made]

    def _superseding(self, user_id: str, written: list[Memory]) -> list[Memory]:
        """`written` with what supersession found they change recorded (when it is on)."""
        supersede = self._ingest.reflector.supersede
        return supersede(user_id, written) if supersede else written

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
        meta = check_metadata({**current.metadata, **(metadata or {})}) \
            if metadata is not None else current.metadata
        return self._superseding(user_id, [rewritten(
            current, text, meta, store=self.store, compressor=self.pipeline.compressor,
            embedder=self.embedder)])[0]

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
        return self._ingest.add_sessions(sessions, user_id=user_id, progress=progress)

    def reflect_pending(self, *, all_open: bool = False,
                        retry_failed: bool = False) -> list[Memory]:
        """Reflect sessions that ended (or idled out) without finishing their reflection.

        A session whose reflection fails is recorded and skipped; it is retried after
        `sessions.reflection_retry_delay` (doubling) up to
        `sessions.reflection_max_attempts` failures in all (`retry_failed=True` tries every
        such session now). Never raises for one session's failure.
        """
        return self._ingest.reflect_pending(all_open=all_open, retry_failed=retry_failed)

    # read path ------------------------------------------------------------------------------
    def search(self, query: str, *, user_id: str, k: int | None = None,
               max_words: int | None = None,
               follow_links: bool = False, explore: bool = False,
               filters: Mapping[str, Any] | None = None, agent_id: str | None = None,
               run_id: str | None = None, session_id: str | None = None,
               min_score: float | None = None,
               as_of: datetime | str | None = None, explain: bool = False) -> SearchResult:
        """Retrieve top-K candidates (dense + BM25, fused), rerank, return the best hits.

        One ranked list, cut three ways, each keeping a prefix (`rmm_core.read.ranked`):
        `k` hits at most (default 5 without `max_words`, no limit with it), hits while
        their texts fit in `max_words` words (strict: the first that does not fit ends the
        list), and hits scoring at least `min_score`. `search(k=a)` is the head of
        `search(k=b)`; hits come in non-increasing `score`.

        Turns not yet reflected are candidates too, as provisional hits (`search.immediate_recall`),
        except those of `session_id`: the caller's current conversation, which its context
        holds already. `filters` keep memories whose metadata has each key with that value
        (a list: any of them); `agent_id`/`run_id` are filters on those keys.

        A hit's `score`, in [0, 1], is its relevance capped by the relevance of the hits
        above it, times what its place leaves of it (see `rmm_core.read.score`); `rank` its
        place, from 1.

        `follow_links` (A-MEM, needs `notes.enabled=True`) puts each hit's linked memories right
        after it, within the same `k`. `explore` samples the kept `k` (Gumbel noise, softmax
        temperature `reranker.temperature`) so that `feedback` can learn.

        A memory a later one superseded comes right after its successor (unless the query
        asks about the past) and its text says so: "(changed 10 February 2024 → ...)";
        `hit.current` is then False (see `MemoryHit.current`).
        `as_of` (a date) searches what was true then: memories said by that time and not
        yet superseded.

        `explain=True` attaches `result.explanation`: every candidate's signals (BM25, dense,
        best turn, fused, the reranker's features), the final order and where a word budget
        cuts the hits (`rmm_core.read.explain`); computed only when asked.
        """
        user_id = check_id(user_id, "user_id")
        query = check_query(query, self.config.search.max_query_chars)
        k = check_count(k, "k") if k is not None else None if max_words is not None else 5
        max_words = check_count(max_words, "max_words") if max_words is not None else None
        wanted = check_filters(filters, agent_id=agent_id, run_id=run_id)
        session_id = check_id(session_id, "session_id", optional=True)
        min_score = check_min_score(min_score)
        as_of = as_datetime(as_of, "as_of")
        return self._search.search(query, user_id=user_id, k=k, wanted=wanted,
                                   session_id=session_id, follow_links=follow_links,
                                   explore=explore, min_score=min_score, as_of=as_of,
                                   max_words=max_words, explain=bool(explain))

    def feedback(self, result: SearchResult, cited: Sequence[str]) -> None:
        """One REINFORCE step from the memories an answer cited (retrospective reflection).

        `cited` holds memory ids (or hits) among `result`'s hits; none cited = all -1.
        A result takes feedback once; a second call raises `FeedbackError`.
        """
        self._search.reranker.feedback(result, cited)

    def respond(self, query: str, *, user_id: str, llm: Any = None, k: int = 5,
                explore: bool = True) -> CitedAnswer:
        """Search, answer with numbered-memory citations, and learn from them (RMM's loop).

        Exploration is on by default because the answer's citations train the reranker.
        """
        model = self._llms.get(llm)
        if model is None:
            raise InvalidInputError("respond needs an llm (argument or ReflectiveMemory's llm)")
        result = self.search(query, user_id=user_id, k=k, explore=explore)
        return cite_and_learn(model, query, result, self.feedback, self._usage_for(user_id))

    def rerank_texts(self, query: str, texts: Sequence[str], *, user_id: str,
                     memory_ids: Sequence[str | None] | None = None) -> list[float]:
        """RMM's learned score q'.m' of arbitrary texts for `query` (framework rerankers call
        this); a text whose memory id is this user's is scored by that memory's stored rows."""
        user_id = check_id(user_id, "user_id")
        query = check_query(query, self.config.search.max_query_chars)
        texts, ids = check_texts(texts, memory_ids)
        if not texts:
            return []
        return self._search.learned_scores(query, texts, ids, user_id=user_id)

    def recall(self, query: str, *, user_id: str, previous_turn: str | Turn | None = None,
               budget: int | None = None, k: int | None = None,
               controller: SCMController | None = None) -> Recall:
        """SCM read path: gate (is memory needed?), search, then build a context within
        `budget` (raw turns or summaries, previous turn always kept); says what and why."""
        controller = controller or SCMController.for_llm(self.llm)
        query = check_query(query, self.config.search.max_query_chars)
        with self._usage_for(user_id):
            return controller.recall(self, query, user_id=user_id,
                                     previous_turn=previous_turn, budget=budget, k=k,
                                     dates=self.config.search.context_dates)

    def best_similarity(self, query: str, *, user_id: str) -> float:
        """The best cosine of any of the user's memories to `query` (0 when none): one
        embedding and one nearest-neighbour look-up, no BM25 or rerank (SCM's gate probe)."""
        return self._search.best_similarity(query, check_id(user_id, "user_id"))

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
        self._search.reranker.forget(user_id)
        self.store.forget(user_id)
        self._search.indexes.drop(user_id)
        self._search.database.drop(user_id)

    @property
    def reranker(self) -> LearnedReranker:
        """The learned reranker, read-only: what `feedback` has taught it, e.g. a user's
        weights as `reranker.weights_for(user_id, memory.embedder.dim)`."""
        return self._search.reranker

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

    # async twins: the same calls in a worker thread -----------------------------------------
    aappend = in_thread("append")
    aend_session = in_thread("end_session")
    aadd_session = in_thread("add_session")
    asearch = in_thread("search")
    afeedback = in_thread("feedback")
    arespond = in_thread("respond")
    aadd = in_thread("add")
    aget = in_thread("get")
    aupdate = in_thread("update")
    adelete = in_thread("delete")
    ahistory = in_thread("history")
    aturns = in_thread("turns")
    amemories = in_thread("memories")
    aforget = in_thread("forget")
