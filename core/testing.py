"""Test doubles for apps built on rmm_core: a scripted LLM and a deterministic embedder.

`ScriptedLLM` answers each prompt by the task it was formatted for (the template constants
of `rmm_core.models.prompts`), so a reworded prompt keeps its answers; `DeterministicEmbedder`
makes the same vector for the same text, offline and without a model. Neither judges
quality: they are for testing flow, parsing and storage.
"""

from __future__ import annotations

import asyncio
import hashlib
import string
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import numpy as np

from .errors import InvalidInputError, RMMError
from .models import prompts

__all__ = [
    "Call",
    "DeterministicEmbedder",
    "ScriptedLLM",
    "UnscriptedPromptError",
    "prompt_task",
    "prompt_templates",
]

Answer = str | BaseException | type[BaseException] | Callable[[str], str]
"""One scripted answer: a text, an exception to raise, or `prompt -> text`."""


class UnscriptedPromptError(RMMError, LookupError):
    """`ScriptedLLM` got a prompt of no known template, or of a task it has no answer for.

    Inside `ReflectiveMemory` the call fails like any LLM failure (an `LLMError`, then the
    stage's LLM-free fallback with an `LLMFallbackWarning`); `ScriptedLLM.calls` records it
    with the task `None`."""


class Call(NamedTuple):
    """One prompt `ScriptedLLM` received: its task (None when unknown) and its text."""

    task: str | None
    prompt: str


def prompt_templates() -> dict[str, str]:
    """Task name -> template: every constant of `rmm_core.models.prompts` with a format
    field, named by its constant in lower case (`EXTRACT` -> "extract")."""
    return {name.lower(): value for name, value in vars(prompts).items()
            if name.isupper() and isinstance(value, str) and _fields(value)}


def prompt_task(prompt: str) -> str:
    """The task whose template `prompt` was formatted from: the template whose fixed
    leading text (everything before its first field) starts the prompt, the longest if
    several do. Raises `UnscriptedPromptError` when none does."""
    best = None
    for task, lead in _leading_texts().items():
        if prompt.startswith(lead) and (best is None or len(lead) > len(best[1])):
            best = task, lead
    if best is None:
        raise UnscriptedPromptError(
            f"the prompt matches none of the templates in rmm_core.models.prompts "
            f"({', '.join(sorted(prompt_templates()))}); it begins {prompt[:80]!r}")
    return best[0]


def _fields(template: str) -> list[str]:
    return [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]


def _leading_text(template: str) -> str:
    """The fixed text a template's prompts start with, as formatted (`{{` becomes `{`)."""
    lead = []
    for literal, field, _, _ in string.Formatter().parse(template):
        lead.append(literal)
        if field is not None:
            break
    return "".join(lead)


def _leading_texts() -> dict[str, str]:
    """Task -> its template's text before the first field (braces unescaped), read from the
    constants at each call so that a changed template is followed at once."""
    leads: dict[str, str] = {}
    for task, template in prompt_templates().items():
        lead = _leading_text(template)
        if not lead.strip():
            raise UnscriptedPromptError(
                f"the template {task.upper()} starts with a field, so its prompts cannot be "
                f"told apart by their leading text")
        twin = next((other for other, text in leads.items() if text == lead), None)
        if twin is not None:
            raise UnscriptedPromptError(
                f"the templates {twin.upper()} and {task.upper()} start with the same text, "
                f"so their prompts cannot be told apart")
        leads[task] = lead
    return leads


class ScriptedLLM:
    """A fake LLM answering each task from its own script, in order; the last answer of a
    task repeats once the others are used.

    Tasks are named after the templates of `rmm_core.models.prompts` in lower case
    (`extract`, `reconcile`, `segment`, `continues`, `repair`, `cite`, `gate`, `notes`, ...;
    see `prompt_templates()`). An answer is a string, an exception (raised), or a callable
    given the prompt. Every prompt received is recorded in `calls`.

        llm = ScriptedLLM(extract=['{"Ann": "NO_TRAIT", "Bob": "NO_TRAIT"}'],
                          cite=["Rex is Ann's beagle [1]."])
        mem = ReflectiveMemory.open(":memory:", embedder=DeterministicEmbedder(), llm=llm)
    """

    def __init__(self, **script: Answer | Iterable[Answer]) -> None:
        known = prompt_templates()
        unknown = sorted(set(script) - set(known))
        if unknown:
            raise InvalidInputError(f"no prompt template for task(s) {unknown}; the tasks "
                                    f"are {sorted(known)}")
        self._script: dict[str, list[Answer]] = {}
        self._lock = threading.Lock()
        self.calls: list[Call] = []
        for task, answers in script.items():
            self.script(task, answers)

    def script(self, task: str, answers: Answer | Iterable[Answer]) -> ScriptedLLM:
        """Replace what is left of `task`'s script with `answers` (one answer or several)."""
        if task not in prompt_templates():
            raise InvalidInputError(f"no prompt template for task {task!r}; the tasks are "
                                    f"{sorted(prompt_templates())}")
        queue = [answers] if _is_one_answer(answers) else list(answers)
        if not queue:
            raise InvalidInputError(f"the script of {task!r} is empty")
        with self._lock:
            self._script[task] = queue
        return self

    def complete(self, prompt: str) -> str:
        """The next scripted answer for the prompt's task."""
        try:
            task = prompt_task(prompt)
        except UnscriptedPromptError:
            with self._lock:
                self.calls.append(Call(None, prompt))
            raise
        with self._lock:
            self.calls.append(Call(task, prompt))
            queue = self._script.get(task)
            if queue is None:
                raise UnscriptedPromptError(
                    f"no answer scripted for a {task!r} prompt; scripted: "
                    f"{sorted(self._script)}")
            answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, BaseException) or \
                (isinstance(answer, type) and issubclass(answer, BaseException)):
            raise answer
        return answer(prompt) if callable(answer) else answer

    async def acomplete(self, prompt: str) -> str:
        return await asyncio.to_thread(self.complete, prompt)

    def tasks(self) -> list[str | None]:
        """The task of each call so far, in order."""
        return [call.task for call in self.calls]

    def prompts(self, task: str) -> list[str]:
        """The prompts received for `task`, in order."""
        return [call.prompt for call in self.calls if call.task == task]


def _is_one_answer(answers: object) -> bool:
    return isinstance(answers, (str, BaseException)) or callable(answers)


class DeterministicEmbedder:
    """Vectors seeded by the sha256 of the whole text: the same text always gets the same
    L2-normalised float32 vector, different texts unrelated ones (no similarity of meaning;
    `rmm_core.models.embed.HashEmbedder` shares words, when a test needs that)."""

    def __init__(self, dim: int = 64) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise InvalidInputError(f"dim must be a positive int, got {dim!r}")
        self.dim = dim
        self.name = f"deterministic-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise InvalidInputError("embed takes a list of texts, not one string")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest(), "big")
            vector = np.random.default_rng(seed).standard_normal(self.dim)
            out[row] = vector / np.linalg.norm(vector)
        return out
