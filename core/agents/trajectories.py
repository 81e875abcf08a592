"""Agent Workflow Memory's records: an agent's trajectory (task, steps, outcome) and the
reusable workflow induced from such runs."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import InvalidInputError
from ..text import clip
from ..types import check_id, utcnow


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
