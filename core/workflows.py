"""Agent Workflow Memory: induce reusable workflows from agent trajectories, keep them per
user or per agent, and retrieve the relevant ones for a new task.

A workflow is a description plus abstract steps whose concrete values are `{placeholders}`.
Induction is an LLM call when an LLM is given, else a rule that abstracts numbers, quoted
values, links, e-mail addresses and proper nouns. Offline: `induce` a batch of trajectories;
online: `record` each finished one, which is induced and added when judged successful.
Workflows are one JSON blob per owner in the store's named state (no backend code needed);
near-identical ones are merged by embedding similarity.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from . import prompts
from .embed import Embedder
from .errors import InvalidInputError, StorageError
from .llm import metered, usage_scope
from .parse import ParseError, ask, ask_yes_no, load_json, with_fallback
from .storage.base import user_state_name
from .storage.cas import compare_and_set
from .storage.protocols import NamedState, UsageLog
from .text import clip
from .types import check_id, utcnow

STATE_PREFIX = "workflows/"


# records ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Step:
    """One step of an agent run: what it saw, what it thought, what it did."""

    observation: str = ""
    reasoning: str = ""
    action: str = ""


@dataclass(slots=True)
class Trajectory:
    """An agent's attempt at a task; `success` None means "not judged yet"."""

    task: str
    steps: list[Step]
    outcome: str = ""
    success: bool | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @classmethod
    def coerce(cls, value: Trajectory | Mapping[str, Any]) -> Trajectory:
        """Validate a `Trajectory` or a dict with the same keys (steps may be dicts)."""
        if isinstance(value, Trajectory):
            value = asdict(value)
        if not isinstance(value, Mapping):
            raise InvalidInputError(
                f"a trajectory must be a Trajectory or a dict, not {type(value).__name__}")
        unknown = set(value) - {"task", "steps", "outcome", "success", "id"}
        if unknown:
            raise InvalidInputError(f"unknown trajectory field(s) {sorted(unknown)}")
        task = value.get("task")
        if not isinstance(task, str) or not task.strip():
            raise InvalidInputError("a trajectory needs a non-empty task string")
        steps_in = value.get("steps") or []
        if isinstance(steps_in, (str, bytes)) or not isinstance(steps_in, Sequence):
            raise InvalidInputError("trajectory steps must be a list of Step or dict")
        steps = []
        for raw in steps_in:
            if isinstance(raw, Step):
                raw = asdict(raw)
            if not isinstance(raw, Mapping) or set(raw) - {"observation", "reasoning", "action"}:
                raise InvalidInputError(f"a step must be a Step or a dict with observation, "
                                        f"reasoning, action; got {raw!r:.80}")
            if not all(isinstance(v, str) for v in raw.values()):
                raise InvalidInputError("step fields must be strings")
            steps.append(Step(**raw))
        success = value.get("success")
        if success is not None and not isinstance(success, bool):
            raise InvalidInputError("trajectory success must be True, False or None")
        outcome = value.get("outcome") or ""
        if not isinstance(outcome, str):
            raise InvalidInputError("trajectory outcome must be a string")
        ident = value.get("id") or uuid.uuid4().hex
        return cls(task.strip(), steps, outcome, success, check_id(ident, "trajectory id"))

    def render(self) -> str:
        lines = [f"Task: {self.task}"]
        for n, step in enumerate(self.steps, start=1):
            parts = [f"{name}: {clip(text, 400)}" for name, text in (
                ("observation", step.observation), ("reasoning", step.reasoning),
                ("action", step.action)) if text]
            lines.append(f"Step {n}. " + " | ".join(parts))
        if self.outcome:
            lines.append(f"Outcome: {clip(self.outcome, 400)}")
        return "\n".join(lines)


@dataclass(slots=True)
class Workflow:
    """A reusable routine: what it is for and its abstract steps."""

    description: str
    steps: list[str]
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    sources: list[str] = field(default_factory=list)
    support: int = 1
    created_at: str = field(default_factory=lambda: utcnow().isoformat())

    def render(self) -> str:
        return "\n".join([f"Workflow: {self.description}",
                          *(f"  {n}. {s}" for n, s in enumerate(self.steps, start=1))])


@dataclass(frozen=True, slots=True)
class WorkflowHit:
    workflow: Workflow
    score: float


def render_workflows(hits: Sequence[WorkflowHit | Workflow]) -> str:
    """Workflows as a system-prompt block ("" when there are none)."""
    flows = [h.workflow if isinstance(h, WorkflowHit) else h for h in hits]
    if not flows:
        return ""
    body = "\n\n".join(f.render() for f in flows)
    return ("Workflows that worked for similar tasks before (adapt the {placeholders} to the "
            f"task at hand; skip steps that do not apply):\n\n{body}")


# induction ---------------------------------------------------------------------------------
@runtime_checkable
class Inducer(Protocol):
    """Turns successful trajectories into workflows."""

    def induce(self, trajectories: Sequence[Trajectory]) -> list[Workflow]: ...


_ABSTRACTIONS = (  # kind -> pattern; applied in this order, each value numbered per kind
    ("url", re.compile(r"https?://\S+|www\.\S+")),
    ("email", re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.]+\b")),
    ("value", re.compile(r"\"[^\"\n]{1,80}\"|'[^'\n]{1,80}'|`[^`\n]{1,80}`")),
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|"
                        r"Sep|Oct|Nov|Dec)[a-z]*(?: \d{4})?\b|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|"
                        r"Aug|Sep|Oct|Nov|Dec)[a-z]* \d{1,2}(?:, \d{4})?\b")),
    ("number", re.compile(r"(?<![\w{])\d[\d,.:/-]*\d(?![\w}])|(?<![\w{])\d(?![\w}])")),
    ("name", re.compile(r"(?<=[a-z,;(] )[A-Z][\w-]*(?: [A-Z][\w-]*)*")),
)


class RuleInducer:
    """LLM-free: one workflow per trajectory, its concrete values made `{kind_n}` placeholders
    (the same value gets the same placeholder in the description and every step)."""

    def induce(self, trajectories: Sequence[Trajectory]) -> list[Workflow]:
        out = []
        for trajectory in trajectories:
            names: dict[str, str] = {}
            description = abstract(trajectory.task, names)
            steps = [abstract(s.action or s.reasoning, names) for s in trajectory.steps]
            out.append(Workflow(description, [s for s in steps if s], sources=[trajectory.id]))
        return out


def abstract(text: str, names: dict[str, str] | None = None) -> str:
    """Replace concrete values by placeholders; `names` maps values seen so far to them."""
    names = {} if names is None else names
    text = " ".join(text.split())
    for kind, pattern in _ABSTRACTIONS:
        def swap(match: re.Match, kind: str = kind) -> str:
            value = match.group(0)
            inner = value[1:-1]
            if kind == "value" and re.fullmatch(r"\{\w+\}", inner):  # already abstracted
                return inner
            if kind == "value" and inner in names:  # a quoted value seen unquoted
                return names[inner]
            if value not in names:
                count = sum(1 for p in names.values() if p.startswith(f"{{{kind}_"))
                names[value] = f"{{{kind}_{count + 1}}}"
            return names[value]
        text = pattern.sub(swap, text)
    return text




class LLMInducer:
    """AWM's induction prompt: workflows with descriptive `{placeholders}`, JSON out."""

    def __init__(self, llm: Any, fallback: Inducer | None = None, batch: int = 4) -> None:
        self.llm, self.batch = metered(llm), batch
        self.fallback = fallback or RuleInducer()

    def induce(self, trajectories: Sequence[Trajectory]) -> list[Workflow]:
        out: list[Workflow] = []
        for start in range(0, len(trajectories), self.batch):
            part = list(trajectories[start:start + self.batch])
            prompt = prompts.INDUCE_WORKFLOWS.format(runs="\n\n".join(t.render() for t in part))
            sources = [t.id for t in part]
            out += with_fallback(
                "workflow induction",
                lambda p=prompt, s=sources: ask(self.llm, p, lambda a: parse_workflows(a, s)),
                lambda p=part: self.fallback.induce(p))
        return out


def parse_workflows(answer: str, sources: list[str]) -> list[Workflow]:
    """Workflows from the LLM's JSON list; `ParseError` names what is wrong."""
    data, _ = load_json(answer)
    if isinstance(data, dict):
        data = data.get("workflows", [data])
    if not isinstance(data, list) or not data:
        raise ParseError("the answer must be a non-empty JSON list of workflow objects")
    out = []
    for pos, item in enumerate(data):
        if not isinstance(item, dict):
            raise ParseError(f"item {pos} is not a JSON object")
        description, steps = item.get("description"), item.get("steps")
        if not isinstance(description, str) or not description.strip():
            raise ParseError(f"workflow {pos} has no \"description\" string")
        if not isinstance(steps, list) or not steps:
            raise ParseError(f"workflow {pos} needs a non-empty \"steps\" list of strings")
        steps = [" ".join(str(s).split()) for s in steps if str(s).strip()]
        out.append(Workflow(" ".join(description.split()), steps, sources=list(sources)))
    return out


# judging success ----------------------------------------------------------------------------
@runtime_checkable
class Judge(Protocol):
    """Decides whether a trajectory accomplished its task (online induction needs it)."""

    def judge(self, trajectory: Trajectory) -> bool: ...


_FAILURE = re.compile(r"\b(error|exception|failed|failure|unable|cannot|can't|could not|"
                      r"not found|timed out|traceback)\b", re.I)


class OutcomeJudge:
    """LLM-free: the trajectory's own `success` flag, else no failure words in its outcome."""

    def judge(self, trajectory: Trajectory) -> bool:
        if trajectory.success is not None:
            return trajectory.success
        return bool(trajectory.outcome.strip()) and not _FAILURE.search(trajectory.outcome)




class LLMSuccessJudge:
    """AWM's model-based evaluator; an explicit `success` flag always wins."""

    def __init__(self, llm: Any, fallback: Judge | None = None) -> None:
        self.llm = metered(llm)
        self.fallback = fallback or OutcomeJudge()

    def judge(self, trajectory: Trajectory) -> bool:
        if trajectory.success is not None:
            return trajectory.success
        verdict = ask_yes_no(self.llm, "success judgement",
                             prompts.TASK_SUCCEEDED.format(run=trajectory.render()), repair=True)
        return self.fallback.judge(trajectory) if verdict is None else verdict


# storage and retrieval -----------------------------------------------------------------------
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
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidInputError(f"k must be a positive integer, got {k!r}")
        stored = self._load(owner_key(user_id, agent_id))[1]
        if not stored or not task.strip():
            return []
        scores = np.vstack([v[-1] for _, v in stored]) @ self.embedder.embed([task])[0]
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

