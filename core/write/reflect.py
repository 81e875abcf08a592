"""Prospective reflection: segment, extract, compress, reconcile, commit (RMM + SeCom)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from ..errors import ReflectionError, RMMError
from ..language.timeref import ground
from ..language.units import fit_units, passages
from ..models.cosines import cosine_scale
from ..models.embed import Embedder
from ..models.llm import usage_scope
from ..storage.base import MergeInto, NewMemory, SessionState, Store
from ..types import FactChange, Memory, Turn, new_memory_id, utcnow
from .compress import Compressor
from .extract import Extractor, SegmentExtractor
from .reconcile import Reconciler
from .segment import Segmenter
from .session import Draft, SessionInput

log = logging.getLogger("rmm_core.write.reflect")


class Placed(Protocol):
    """What placing new memories reads of a user's search index (`rmm_core.read.index`):
    its memories' ids and metadata by position, and the nearest ones to a vector."""

    ids: Sequence[str]
    metadata: Sequence[Mapping[str, Any]]

    def __len__(self) -> int: ...

    def dense_scores(self, query: np.ndarray, depth: int) -> dict[int, float]: ...


@dataclass(slots=True)
class Pipeline:
    """The four write-path stages; any of them may be an LLM or an LLM-free implementation."""

    segmenter: Segmenter
    extractor: Extractor
    compressor: Compressor
    reconciler: Reconciler
    usage: dict[str, int] = field(default_factory=dict)


class Reflector:
    """Turns a session's unreflected turns into memories, committed exactly once."""

    def __init__(self, store: Store, embedder: Embedder, pipeline: Pipeline,
                 index_for: Callable[[str], Placed], *, turn_vectors: bool = True,
                 memory_vector: str = "text", neighbours: int = 3,
                 retry_delay: float = 60.0, unit_words: int = 10**9) -> None:
        self.store, self.embedder, self.pipeline = store, embedder, pipeline
        self.index_for = index_for
        self.turn_vectors = turn_vectors
        self.memory_vector = memory_vector
        self.neighbours = neighbours
        self.retry_delay = retry_delay
        self.unit_words = unit_words
        self.after_commit: Callable[[str, list[Memory]], list[Memory]] | None = None
        """Runs on the committed memories (e.g. A-MEM notes); returns them updated."""
        self.supersede: Callable[[str, list[Memory], list[FactChange]], list[Memory]] \
            | None = None
        """Records what the committed memories change, with the changes reconciliation
        decided (`supersede.Supersession`); returns them as they are then."""

    def reflect(self, state: SessionState) -> list[Memory]:
        """Reflect the turns after `state.reflected`; [] when another worker did it first.

        A failure is recorded on the session (one more failed attempt, the error, and a
        retry time `retry_delay` x 2^attempts ahead) and raised typed: an `RMMError` as it
        is, anything else as `ReflectionError`. A failure of `after_commit` (notes) after
        the memories were committed is recorded and logged, not raised.
        """
        def save(usage: dict[str, int]) -> None:
            self.store.add_usage(state.user_id, state.session_id, usage)

        with usage_scope(state.session_id, save):  # the LLM stages count into it
            try:
                done, replaced = self._reflect(state)
            except Exception as exc:
                retry_at = time.time() + self.retry_delay * 2 ** state.failures
                self._record(state, exc, retry_at=retry_at)
                if isinstance(exc, RMMError):
                    raise
                raise ReflectionError(f"reflecting session {state.session_id!r} failed: "
                                      f"{type(exc).__name__}: {exc}") from exc
            if done and self.supersede is not None:
                done = self.supersede(state.user_id, done, replaced)
            if done and self.after_commit is not None:
                done = self._after_commit(state, done)
        return done or []

    def _after_commit(self, state: SessionState, done: list[Memory]) -> list[Memory]:
        try:
            return self.after_commit(state.user_id, done)
        except Exception as exc:
            log.warning("notes after reflecting session %r failed; its memories are kept "
                        "and get their notes with the user's next reflection",
                        state.session_id, exc_info=True)
            self._record(state, exc, retry_at=None, counted=False, step="notes")
            return done

    def _record(self, state: SessionState, exc: Exception, *, retry_at: float | None,
                counted: bool = True, step: str = "reflection") -> None:
        error = f"{step}: {type(exc).__name__}: {exc}"
        try:
            self.store.record_reflection_failure(state.user_id, state.session_id, error,
                                                 retry_at=retry_at, counted=counted)
        except Exception:  # the original failure is what the caller needs to see
            log.exception("could not record the failure of session %r", state.session_id)

    def _reflect(self, state: SessionState) -> tuple[list[Memory] | None, list[FactChange]]:
        """The committed memories (None: another worker committed first) and what an LLM's
        reconciliation decided of the stored memories it saw: each one the new memories
        supersede, and each one they do not (`kind` "none")."""
        turns = self.store.turns(state.user_id, state.session_id, after_seq=state.reflected)
        if not turns:
            return [], []
        session, segments = self._units(state, turns)
        drafts = self.pipeline.extractor.extract(session, segments)
        keys = self.pipeline.compressor.compress([d.text for d in drafts])
        for draft, key in zip(drafts, keys):
            draft.key = key or draft.text
        vectors = self._vectors(session, drafts)
        decisions = self.pipeline.reconciler.reconcile(
            drafts, self._neighbours(state, [v[0] for v in vectors]))
        adds: list[NewMemory] = []
        merges: dict[str, MergeInto] = {}
        replaced: list[FactChange] = []
        for decision in decisions:
            draft, vecs = drafts[decision.draft], vectors[decision.draft]
            if decision.target is None:
                memory = self._memory(state, draft)
                if decision.replaces:  # the LLM's update: the new summary supersedes
                    memory.text = memory.key = decision.text or draft.text
                    replaced.append(FactChange(decision.replaces, memory.id, memory.valid_from,
                                               "supersedes", by=memory.text))
                # the LLM decided for the stored memories it saw: Update, or none
                replaced += [FactChange(old, memory.id, memory.valid_from, "none")
                             for old in decision.judged if old != decision.replaces]
                adds.append(NewMemory(memory, vecs))
            elif decision.target in merges:  # a second draft folded into the same memory
                merge = merges[decision.target]
                merge.text = decision.text or f"{merge.text}\n{draft.text}"
                merge.refs += draft.refs
                merge.speakers += draft.speakers
                merge.vectors = np.vstack([merge.vectors, vecs[1:]])
            else:
                merges[decision.target] = MergeInto(
                    decision.target, decision.text or draft.text, "", list(draft.refs), vecs,
                    source=state.session_id, speakers=list(draft.speakers),
                    session_ids=[state.session_id])
        self._finish_merges(state.user_id, list(merges.values()))
        return self.store.commit_reflection(state.user_id, state.session_id, state.reflected,
                                            state.reflected + len(turns), adds,
                                            list(merges.values())), replaced

    def _units(self, state: SessionState, turns: list[Turn]
               ) -> tuple[SessionInput, list[list[int]]]:
        """The session as pieces that fit `unit_words` (long turns as passages; for LLM-free
        extraction, relative times followed by their dates: `timeref.ground`), each
        embedded whole, and its segments (found over whole turns) as runs of pieces that
        fit it too."""
        if isinstance(self.pipeline.extractor, SegmentExtractor):  # an LLM dates in its words
            turns = [replace(t, text=ground(t.text, t.timestamp or state.started_at))
                     for t in turns]  # the memories read dates; the log keeps the words
        split = [passages(t, self.unit_words) for t in turns]
        pieces = [p for parts in split for p in parts]
        vectors = self.embedder.embed([p.render() for p in pieces])
        owner = np.repeat(np.arange(len(turns)), [len(parts) for parts in split])
        turn_vectors = np.zeros((len(turns), vectors.shape[1]), dtype=np.float32)
        np.add.at(turn_vectors, owner, vectors)
        turn_vectors /= np.linalg.norm(turn_vectors, axis=1, keepdims=True).clip(1e-12)
        segments = self.pipeline.segmenter.segment(SessionInput(
            state.user_id, state.session_id, turns, state.started_at, turn_vectors))
        return (SessionInput(state.user_id, state.session_id, pieces, state.started_at, vectors),
                fit_units(split, segments, self.unit_words))

    def _vectors(self, session: SessionInput, drafts: list[Draft]) -> list[np.ndarray]:
        """Per draft: the vector of its text first, then (optionally) those of its turns.

        A draft that is its turns verbatim (LLM-free extraction) gets the normalised mean of
        their vectors instead of a second, longer encoding: half the ingest cost for 1.3
        points of Rtok@1000 on LoCoMo (`embedding.memory_vector="text"` keeps the encoding).
        """
        rows_of: dict[str | None, list[int]] = {}
        for i, t in enumerate(session.turns):
            rows_of.setdefault(t.id, []).append(i)
        turn_rows = [d.positions or [i for r in d.refs for i in rows_of.get(r, [])]
                     for d in drafts]
        verbatim = [self.memory_vector == "turns_mean" and bool(rows) and
                    d.attrs.get("source") == "segment" for d, rows in zip(drafts, turn_rows)]
        encoded = iter(self.embedder.embed([d.text for d, v in zip(drafts, verbatim) if not v]))
        out = []
        for rows, is_verbatim in zip(turn_rows, verbatim):
            if is_verbatim:
                mean = session.vectors[rows].mean(axis=0)
                head = mean / (np.linalg.norm(mean) or 1.0)
            else:
                head = next(encoded)
            parts = [head[None, :].astype(np.float32)]
            if self.turn_vectors and rows:
                parts.append(session.vectors[rows])
            out.append(np.vstack(parts))
        return out

    def _neighbours(self, state: SessionState, key_vecs: list[np.ndarray]
                    ) -> list[list[tuple[Memory, float]]]:
        """The nearest stored memories of each draft that may take a merge: those with the
        session's metadata (a merge must not carry a memory into another agent's or run's
        scope)."""
        user_id = state.user_id
        index = self.index_for(user_id)
        if not len(index) or not key_vecs:
            return [[] for _ in key_vecs]
        found = [{p: s for p, s in index.dense_scores(v, self.neighbours * 8).items()
                  if index.metadata[p] == state.metadata} for v in key_vecs]
        wanted = list(dict.fromkeys(p for f in found for p in list(f)[: self.neighbours]))
        by_pos = dict(zip(wanted, self.store.memories(
            user_id, [index.ids[p] for p in wanted], with_versions=False)))
        scale = cosine_scale(self.embedder)  # the merge thresholds are on the MiniLM's scale
        return [[(by_pos[p], scale.of_texts(s)) for p, s in list(f.items())[: self.neighbours]
                 if p in by_pos] for f in found]

    def _finish_merges(self, user_id: str, merges: list[MergeInto]) -> None:
        """A merged memory gets a fresh key and text vector from its merged text."""
        if not merges:
            return
        keys = self.pipeline.compressor.compress([m.text for m in merges])
        key_vecs = self.embedder.embed([m.text for m in merges])
        old = self.store.memory_vectors(user_id, [m.target_id for m in merges])
        for merge, key, key_vec in zip(merges, keys, key_vecs):
            merge.key = key or merge.text
            turn_part = merge.vectors[1:]
            kept = old.get(merge.target_id, np.zeros((1, len(key_vec)), np.float32))[1:]
            merge.vectors = np.vstack([key_vec[None, :], kept, turn_part])

    @staticmethod
    def _memory(state: SessionState, draft: Draft) -> Memory:
        now = utcnow()
        return Memory(id=new_memory_id(), user_id=state.user_id, text=draft.text,
                      key=draft.key, refs=list(draft.refs), speakers=draft.speakers,
                      session_ids=[state.session_id],
                      occurred_at=draft.occurred_at or state.started_at,
                      created_at=now, updated_at=now, attrs=dict(draft.attrs),
                      metadata=dict(state.metadata))
