"""Reading LLM answers: lenient JSON, one repair round, then the LLM-free stage.

LLMs wrap JSON in code fences, add prose, stop mid-object or break the syntax. `load_json`
takes the first JSON value it can recover (repairing with `json_repair`); each stage then
validates it and raises `ParseError` with a message that is sent back in a repair prompt.
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import json_repair

from ..errors import LLMError, LLMFallbackWarning
from . import prompts
from .llm import current_session, record_usage

log = logging.getLogger("rmm_core.models.llm")
T = TypeVar("T")

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)(?:```|$)", re.S)


class ParseError(ValueError):
    """An LLM answer is unusable; the message says why, in words the LLM can act on."""


def load_json(answer: str) -> tuple[Any, bool]:
    """The first JSON value in `answer` and whether it had to be repaired (e.g. truncated)."""
    text = answer.strip()
    fenced = _FENCE.search(text)
    if fenced and fenced.group(1).strip():
        text = fenced.group(1).strip()
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise ParseError("the answer holds no JSON" if text else "the answer was empty")
    text = text[min(starts):]
    try:
        return json.JSONDecoder().raw_decode(text)[0], False
    except RecursionError as exc:
        raise ParseError("the JSON is nested too deeply") from exc
    except json.JSONDecodeError as exc:
        problem = exc.msg
    try:
        repaired = json_repair.loads(text)
    except (ValueError, RecursionError) as exc:  # json_repair gives up on deep nesting
        raise ParseError(f"the JSON is invalid ({problem})") from exc
    if repaired in ("", None) or (isinstance(repaired, (list, dict)) and not repaired):
        raise ParseError(f"the JSON is invalid ({problem})")
    return repaired, True


def as_index(value: Any) -> int | None:
    """An integer index from 3, 3.0, "3" or "[3]"; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        found = re.fullmatch(r"\s*\[?\s*(\d+)\s*\]?\s*", value)
        return int(found.group(1)) if found else None
    return None


def yes_no(answer: str) -> bool | None:
    """The answer's verdict: the first "yes" or "no" among its first five words (so "Yes.",
    "**No**" and "Answer: yes" count, and a long explanation that merely mentions one does
    not); None when there is none."""
    for word in re.findall(r"[a-z]+", answer.lower())[:5]:
        if word in ("yes", "no"):
            return word == "yes"
    return None


def parse_yes_no(answer: str) -> bool:
    """`yes_no` for `ask`: a `ParseError` (sent back in the repair prompt) when unclear."""
    verdict = yes_no(answer)
    if verdict is None:
        raise ParseError("answer with one word: yes or no")
    return verdict


def ask(llm: Any, prompt: str, parse: Callable[[str], T]) -> T:
    """Ask, parse, and on a `ParseError` ask once more with the problem named.

    Raises `LLMError` when the LLM fails or the second answer is unusable too.
    """
    answer = llm.complete(prompt)
    try:
        return parse(answer)
    except ParseError as first:
        problem = str(first)
    repair = prompts.REPAIR.format(problem=problem, prompt=prompt, answer=answer[:4000])
    second = llm.complete(repair)
    try:
        return parse(second)
    except ParseError as exc:
        raise LLMError(f"unusable answer after one repair: {exc}") from exc


ANSWER_ERRORS = (LLMError, ValueError, TypeError, KeyError, IndexError, AttributeError,
                 RecursionError)
"""What asking the LLM and reading its answer can raise: the LLM failed (`LLMError`), or
its answer tripped the parsing (`ParseError` is a `ValueError`). Other errors (storage, a
missing extra) are not the LLM's and propagate."""


def with_fallback(stage: str, run: Callable[[], T], fallback: Callable[[], T]) -> T:
    """`run()`; if the LLM or its answer fails, warn and return `fallback()` (the LLM-free
    stage)."""
    try:
        return run()
    except ANSWER_ERRORS as exc:
        if not isinstance(exc, LLMError) or isinstance(exc.__cause__, ParseError):
            record_usage(failures=1)
        where = f" for session {current_session()!r}" if current_session() else ""
        message = (f"LLM {stage} failed{where} ({type(exc).__name__}: {exc}); used the "
                   f"LLM-free {stage} instead")
        log.warning(message, exc_info=not isinstance(exc, LLMError))
        warnings.warn(message, LLMFallbackWarning, stacklevel=3)
        return fallback()


def ask_yes_no(llm: Any, stage: str, prompt: str, *, repair: bool = False) -> bool | None:
    """The LLM's yes or no to `prompt`; None when the answer is unclear (after one repair
    round with `repair`) or the LLM failed (with a warning), so the caller's LLM-free
    judgement decides."""
    if repair:
        return with_fallback(stage, lambda: ask(llm, prompt, parse_yes_no), lambda: None)
    return with_fallback(stage, lambda: yes_no(llm.complete(prompt)), lambda: None)
