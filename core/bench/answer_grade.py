"""One question of `rmm bench answer`: the reader answers from a context, the judge grades the
answer, LoCoMo's way (CORRECT or WRONG against the gold answer, with LongMemEval's per-type
leniency where the category names one) or BEAM's (each rubric item met, partly or missed)."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import LLMError
from ..models import prompts
from ..models.llm import usage_scope
from ..models.parse import ParseError, ask

TYPE_GUIDANCE = {
    "temporal-reasoning": "For a count of days, weeks or months, an answer off by one still "
                          "counts as CORRECT.",
    "knowledge-update": "The reference answer is the latest value; an answer that also "
                        "mentions an older value is CORRECT when it gives the latest one as "
                        "what holds now.",
    "single-session-preference": "The reference answer describes what a good answer takes "
                                 "into account; grade CORRECT when the answer uses the "
                                 "user's own preferences and circumstances that way.",
    "abstention": "The question cannot be answered from the conversations; grade CORRECT "
                  "only when the answer says it does not know or cannot tell.",
}
"""LongMemEval's question types whose judging differs from the plain comparison (a JSON Lines
question names its type as its `category`); the others get none."""
TYPE_GUIDANCE["temporal_reasoning"] = TYPE_GUIDANCE["temporal-reasoning"]
TYPE_GUIDANCE["knowledge_update"] = TYPE_GUIDANCE["knowledge-update"]

RUBRIC_GRADES = {"met": 1.0, "partly": 0.5, "missed": 0.0}
_VERDICT = re.compile(r"\b(correct|incorrect|wrong)\b", re.I)
_GRADE = re.compile(r"\b(met|partly|missed|not met)\b", re.I)


@dataclass(slots=True)
class Graded:
    """What one context earned on one question, and what it cost."""

    answer: str | None
    """The reader's answer; None when the reader failed every try."""
    score: float | None
    """1 correct, 0 wrong, a rubric's mean grade; None when the judge gave no usable verdict."""
    reader_calls: int = 0
    judge_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    judge_tokens: int = 0
    reader_s: float = 0.0
    judge_s: float = 0.0
    errors: list[str] = field(default_factory=list)

    def as_record(self) -> dict[str, Any]:
        return asdict(self)


def parse_verdict(reply: str) -> bool:
    """CORRECT -> True, WRONG (or INCORRECT) -> False; a `ParseError` when the reply holds
    neither or both."""
    found = {word.lower() != "correct" for word in _VERDICT.findall(reply)}
    if len(found) != 1:
        raise ParseError("reply with one word: CORRECT or WRONG" if not found else
                         "the reply says both CORRECT and WRONG; reply with one of them")
    return not found.pop()


def parse_grade(reply: str) -> float:
    """MET -> 1, PARTLY -> 0.5, MISSED (or NOT MET) -> 0; a `ParseError` otherwise."""
    found = {RUBRIC_GRADES.get(word.lower(), 0.0) for word in _GRADE.findall(reply)}
    if len(found) != 1:
        raise ParseError("reply with one word: MET, PARTLY or MISSED")
    return found.pop()


def read(reader: Any, question: str, context: str, retries: int = 1) -> Graded:
    """The reader's answer to `question` from `context`, tried `1 + retries` times when the
    LLM fails; the answer is None when every try failed."""
    prompt = prompts.READ_AND_ANSWER.format(context=context or "(none)", question=question)
    graded = Graded(None, None)
    start = time.perf_counter()
    with usage_scope() as usage:
        for _ in range(1 + retries):
            try:
                graded.answer = reader.complete(prompt).strip()
                break
            except LLMError as exc:
                graded.errors.append(f"reader failed: {exc}")
    graded.reader_s = time.perf_counter() - start
    graded.reader_calls = usage["calls"]
    graded.prompt_tokens, graded.completion_tokens = (usage["prompt_tokens"],
                                                      usage["completion_tokens"])
    return graded


def judge(judge_llm: Any, graded: Graded, question: str, gold: str, category: str,
          rubric: Sequence[str] = (), retries: int = 1) -> Graded:
    """Grade `graded.answer`: each rubric item when there are any, else against `gold`. An
    empty or missing answer scores 0 without a call; a judge whose reply stays unusable
    after one repair (or that fails every try) leaves the score None."""
    if not graded.answer:
        graded.score = 0.0
        return graded
    start = time.perf_counter()
    with usage_scope() as usage:
        if rubric:
            grades = [_ask(judge_llm, prompts.GRADE_RUBRIC.format(
                question=question, answer=graded.answer, item=item), parse_grade, retries,
                graded.errors) for item in rubric]
            graded.score = None if None in grades else sum(grades) / len(grades)
        else:
            guidance = TYPE_GUIDANCE.get(str(category), "")
            verdict = _ask(judge_llm, prompts.GRADE_ANSWER.format(
                question=question, gold=gold, answer=graded.answer,
                guidance=f"\n{guidance}" if guidance else ""), parse_verdict, retries,
                graded.errors)
            graded.score = None if verdict is None else float(verdict)
    graded.judge_s = time.perf_counter() - start
    graded.judge_calls = usage["calls"]
    graded.judge_tokens = usage["prompt_tokens"] + usage["completion_tokens"]
    return graded


def _ask(llm: Any, prompt: str, parse: Any, retries: int, errors: list[str]) -> Any:
    """`ask` (one repair round on an unusable reply), tried again when the LLM fails; None,
    with the reason in `errors`, when no try gave a usable reply."""
    for _ in range(1 + retries):
        try:
            return ask(llm, prompt, parse)
        except LLMError as exc:
            if isinstance(exc.__cause__, ParseError):
                errors.append(f"judge unusable: {exc}")
                return None  # the judge answered twice, unusably: asking again won't help
            errors.append(f"judge failed: {exc}")
    return None
