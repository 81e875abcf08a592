"""Agent Workflow Memory's induction and success judgement: successful trajectories become
workflows whose concrete values are `{placeholders}` (by the LLM, or by rules that abstract
numbers, quoted values, links, e-mail addresses and proper nouns)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..models import prompts
from ..models.llm import metered
from ..models.parse import ParseError, ask, ask_yes_no, load_json, with_fallback
from .trajectories import Trajectory, Workflow


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
