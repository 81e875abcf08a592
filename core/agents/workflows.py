"""Agent Workflow Memory: induce reusable workflows from agent trajectories, keep them per
user or per agent, and retrieve the relevant ones for a new task.

A workflow is a description plus abstract steps whose concrete values are `{placeholders}`.
Induction is an LLM call when an LLM is given, else a rule that abstracts numbers, quoted
values, links, e-mail addresses and proper nouns. Offline: `induce` a batch of trajectories;
online: `record` each finished one, which is induced and added when judged successful.
Workflows are one JSON blob per owner in the store's named state (no backend code needed);
near-identical ones are merged by embedding similarity. The records live in
`trajectories.py`, induction and judging in `induce.py`.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any, Protocol

import numpy as np

from ..errors import InvalidInputError, StorageError
from ..models.cosines import cosine_scale
from ..models.embed import Embedder, query_vectors
from ..models.llm import metered, usage_scope
from ..storage.base import user_state_name
from ..storage.compare_and_set import compare_and_set
from ..storage.protocols import NamedState, UsageLog
from ..types import check_count, check_id
from .induce import (
    Inducer,
    Judge,
    LLMInducer,
    LLMSuccessJudge,
    OutcomeJudge,
    RuleInducer,
    abstract,
    parse_workflows,
)
from .trajectories import Step, Trajectory, Workflow, WorkflowHit, render_workflows

__all__ = [
    "Inducer", "Judge", "LLMInducer", "LLMSuccessJudge", "OutcomeJudge", "RuleInducer",
    "Step", "Trajectory", "Workflow", "WorkflowHit", "WorkflowMemory", "abstract",
    "as_workflow_memory", "owner_key", "parse_workflows", "render_workflows"]

STATE_PREFIX = "workflows/"


def owner_key(user_id: str | None, agent_id: str | None) -> str:
    """`user/<id>` or `agent/<id>`: exactly one of the two must be given."""
    if (user_id is None) == (agent_id is None):
        raise InvalidInputError("give exactly one of user_id or agent_id")
    if user_id is not None:
        return f"user/{check_id(user_id, 'user_id')}"
    return f"agent/{check_id(agent_id, 'agent_id')}"


class WorkflowStore(NamedState, UsageLog, Protocol):
    """What workflow memory keeps its workflows in: named state, and users' LLM usage."""


class WorkflowMemory:
    """Workflows per user or per agent: induce (offline), record (online), search, forget."""

    def __init__(self, store: WorkflowStore, embedder: Embedder, *, llm: Any = None,
                 inducer: Inducer | None = None, judge: Judge | None = None,
                 dedup_threshold: float = 0.9) -> None:
        model = metered(llm)
        self.store, self.embedder = store, embedder
        self.inducer = inducer or (LLMInducer(model) if model else RuleInducer())
        self.judge = judge or (LLMSuccessJudge(model) if model else OutcomeJudge())
        self.dedup_threshold = dedup_threshold

    def induce(self, trajectories: Sequence[Trajectory | Mapping[str, Any]], *,
               user_id: str | None = None, agent_id: str | None = None) -> list[Workflow]:
        """Offline mode: induce from the batch's successful trajectories and store the result
        (a near-duplicate of a stored workflow strengthens it instead)."""
        owner = owner_key(user_id, agent_id)
        batch = [Trajectory.coerce(t) for t in trajectories]
        # a user's LLM calls count in their usage (an agent's in none)
        save = (lambda tally: self.store.add_usage(user_id, "", tally)) if user_id else None
        with usage_scope(save=save):
            good = [t for t in batch if self.judge.judge(t)]
            induced = self.inducer.induce(good) if good else []
        return self._add(owner, induced) if good else []

    def record(self, trajectory: Trajectory | Mapping[str, Any], *, user_id: str | None = None,
               agent_id: str | None = None) -> list[Workflow]:
        """Online mode: after a task, induce and add when it is judged successful."""
        return self.induce([trajectory], user_id=user_id, agent_id=agent_id)

    def add(self, workflows: Sequence[Workflow], *, user_id: str | None = None,
            agent_id: str | None = None) -> list[Workflow]:
        """Store hand-written (or imported) workflows, deduplicated like induced ones."""
        if not all(isinstance(w, Workflow) and w.description.strip() for w in workflows):
            raise InvalidInputError("add() takes Workflow objects with a description")
        return self._add(owner_key(user_id, agent_id), list(workflows))

    def workflows(self, *, user_id: str | None = None,
                  agent_id: str | None = None) -> list[Workflow]:
        return [w for w, _ in self._load(owner_key(user_id, agent_id))[1]]

    def search(self, task: str, *, user_id: str | None = None, agent_id: str | None = None,
               k: int = 3, min_score: float = 0.3) -> list[WorkflowHit]:
        """The stored workflows closest to the task (cosine of embeddings), best first;
        those below `min_score` are left out."""
        if not isinstance(task, str):
            raise InvalidInputError(f"task must be a string, not {type(task).__name__}")
        check_count(k, "k")
        stored = self._load(owner_key(user_id, agent_id))[1]
        if not stored or not task.strip():
            return []
        scores = cosine_scale(self.embedder).of_query(  # min_score is on the MiniLM's scale
            np.vstack([v[-1] for _, v in stored]) @ query_vectors(self.embedder, [task])[0])
        order = np.argsort(-scores, kind="stable")[:k]
        return [WorkflowHit(stored[i][0], float(scores[i])) for i in order
                if scores[i] >= min_score]

    def prompt(self, task: str, **kw: Any) -> str:
        """`search` rendered as a system-prompt block ("" when nothing is relevant)."""
        return render_workflows(self.search(task, **kw))

    def forget(self, *, user_id: str | None = None, agent_id: str | None = None) -> None:
        """Delete every workflow of the owner."""
        self._update(owner_key(user_id, agent_id), lambda stored: stored.clear())

    async def ainduce(self, trajectories: Sequence[Any], **kw: Any) -> list[Workflow]:
        return await asyncio.to_thread(self.induce, trajectories, **kw)

    async def arecord(self, trajectory: Any, **kw: Any) -> list[Workflow]:
        return await asyncio.to_thread(self.record, trajectory, **kw)

    async def asearch(self, task: str, **kw: Any) -> list[WorkflowHit]:
        return await asyncio.to_thread(self.search, task, **kw)

    async def aprompt(self, task: str, **kw: Any) -> str:
        return await asyncio.to_thread(self.prompt, task, **kw)

    # internals -------------------------------------------------------------------------------
    def _add(self, owner: str, new: list[Workflow]) -> list[Workflow]:
        new = [w for w in new if w.steps]
        if not new:
            return []
        # per workflow: row 0 embeds it whole (dedup), row 1 its description (retrieval)
        embedded = self.embedder.embed([t for w in new for t in (_embed_text(w), w.description)])
        vectors = embedded.reshape(len(new), 2, -1)
        result: list[Workflow] = []

        def merge(stored: list[tuple[Workflow, np.ndarray]]) -> list[tuple[Workflow, np.ndarray]]:
            result.clear()
            for flow, vector in zip(new, vectors):
                sims = [float(v[0] @ vector[0]) for _, v in stored]
                best = int(np.argmax(sims)) if sims else -1
                if best >= 0 and sims[best] >= self.dedup_threshold:
                    kept = stored[best][0]
                    kept.support += 1
                    kept.sources = list(dict.fromkeys(kept.sources + flow.sources))
                    result.append(kept)
                else:
                    stored.append((flow, vector))
                    result.append(flow)
            return stored

        self._update(owner, merge)
        return _unique(result)

    def _load(self, owner: str) -> tuple[int, list[tuple[Workflow, np.ndarray]]]:
        version, blob = self.store.load_state(_state_name(owner))
        if not blob:
            return version, []
        try:
            rows = json.loads(blob)
            return version, [(Workflow(**r["workflow"]), _vector(r["vector"])) for r in rows]
        except (ValueError, KeyError, TypeError) as exc:
            raise StorageError(f"stored workflows of {owner} are unreadable: {exc}") from exc

    def _update(self, owner: str, change: Callable[[list], Any]) -> None:
        """Read, change in place, compare-and-set (retried when another writer got there
        first)."""
        def save(version: int, stored: list[tuple[Workflow, np.ndarray]]) -> bool:
            rows = [{"workflow": asdict(w), "vector": base64.b64encode(
                np.asarray(v, dtype=np.float32).tobytes()).decode()} for w, v in stored]
            return self.store.save_state(_state_name(owner), version, json.dumps(rows).encode())

        compare_and_set(lambda: self._load(owner), save, change, what=f"workflows of {owner}")


def as_workflow_memory(memory: Any) -> WorkflowMemory:
    """A `WorkflowMemory`, or a `ReflectiveMemory`'s own (what the framework hooks accept)."""
    workflows = getattr(memory, "workflows", memory)
    if not isinstance(workflows, WorkflowMemory):
        raise InvalidInputError(f"memory must be a ReflectiveMemory or a WorkflowMemory, "
                                f"not {type(memory).__name__}")
    return workflows


def _state_name(owner: str) -> str:
    """An agent's workflows by its name; a user's under a hash of the user id, so that the
    row `forget` empties does not keep the id."""
    kind, _, ident = owner.partition("/")
    return user_state_name(ident, "workflows") if kind == "user" else STATE_PREFIX + owner


def _unique(flows: list[Workflow]) -> list[Workflow]:
    seen: dict[str, Workflow] = {}
    for flow in flows:
        seen.setdefault(flow.id, flow)
    return list(seen.values())


def _vector(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=np.float32).reshape(2, -1)


def _embed_text(flow: Workflow) -> str:
    return flow.description + "\n" + "\n".join(flow.steps)

