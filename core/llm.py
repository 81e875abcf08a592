"""The one LLM interface the core knows: `complete(prompt) -> str` (async when offered)."""

from __future__ import annotations

import asyncio
import importlib
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

from .errors import InvalidInputError, LLMError


@runtime_checkable
class LLM(Protocol):
    """Anything that completes a prompt with text."""

    def complete(self, prompt: str) -> str: ...


class CallableLLM:
    """Wraps a plain `str -> str` callable."""

    def __init__(self, fn: Callable[[str], str]) -> None:
        self.fn = fn

    def complete(self, prompt: str) -> str:
        return str(self.fn(prompt))

    async def acomplete(self, prompt: str) -> str:
        return await asyncio.to_thread(self.complete, prompt)


# Framework objects are recognised by the top-level package of their class; the adapter
# module named here (shipped with this distribution) wraps them. The core imports neither.
_FRAMEWORK_ADAPTERS = {
    "langchain_core": "langchain_rmm.llm",
    "langchain": "langchain_rmm.llm",
    "langchain_community": "langchain_rmm.llm",
    "llama_index": "llamaindex_rmm.llm",
}


def as_llm(obj: Any) -> LLM:
    """Coerce a LangChain chat model, a LlamaIndex LLM, an object with `complete`, or a
    callable into an `LLM`."""
    for cls in type(obj).__mro__:
        root = cls.__module__.split(".")[0]
        if root in _FRAMEWORK_ADAPTERS:
            return importlib.import_module(_FRAMEWORK_ADAPTERS[root]).wrap_llm(obj)
    if isinstance(obj, LLM) or hasattr(obj, "acomplete") or hasattr(obj, "complete_with_usage"):
        return obj
    if callable(obj):
        return CallableLLM(obj)
    raise InvalidInputError(
        f"llm must be a LangChain chat model, a LlamaIndex LLM, an object with "
        f"complete(prompt) -> str (or async acomplete), or a callable; "
        f"got {type(obj).__name__}")


# usage accounting -----------------------------------------------------------------------------
USAGE_FIELDS = ("calls", "prompt_tokens", "completion_tokens", "failures")

_TALLY: ContextVar[dict[str, int] | None] = ContextVar("rmm_llm_usage", default=None)
_SESSION: ContextVar[str] = ContextVar("rmm_llm_session", default="")


def start_usage(session_id: str = "") -> dict[str, int]:
    """Start counting LLM usage for the work done next in this context (one reflection)."""
    tally = dict.fromkeys(USAGE_FIELDS, 0)
    _TALLY.set(tally)
    _SESSION.set(session_id)
    return tally


def current_session() -> str:
    """The session whose reflection is running in this context ("" outside one)."""
    return _SESSION.get()


def record_usage(**counts: int) -> None:
    """Add to the current tally (a no-op outside `start_usage`)."""
    tally = _TALLY.get()
    if tally is not None:
        for name, value in counts.items():
            tally[name] = tally.get(name, 0) + int(value)


def estimate_tokens(text: str) -> int:
    """About four characters per token: the rule of thumb when a backend reports no counts."""
    return (len(text) + 3) // 4


class MeteredLLM:
    """Counts calls and tokens of any `LLM` and bounds each call by `timeout` seconds.

    Token counts come from `complete_with_usage(prompt) -> (text, {prompt_tokens, ...})`
    when the wrapped object offers it, else they are estimated. An object offering only
    `acomplete` is run on its own event loop. Failures raise `LLMError`.
    """

    def __init__(self, llm: Any, *, timeout: float | None = 120.0) -> None:
        self.llm, self.timeout = llm, timeout
        self.totals = dict.fromkeys(USAGE_FIELDS, 0)
        self._lock = threading.Lock()

    def complete(self, prompt: str) -> str:
        outcome: dict[str, Any] = {}
        worker = threading.Thread(target=self._call, args=(prompt, outcome), daemon=True)
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            self._count(calls=1, failures=1, prompt_tokens=estimate_tokens(prompt))
            raise LLMError(f"the LLM did not answer within {self.timeout:g} s")
        if "error" in outcome:
            self._count(calls=1, failures=1)
            exc = outcome["error"]
            raise LLMError(f"the LLM call failed: {type(exc).__name__}: {exc}") from exc
        text, usage = outcome["result"]
        self._count(calls=1,
                    prompt_tokens=usage.get("prompt_tokens") or estimate_tokens(prompt),
                    completion_tokens=usage.get("completion_tokens") or estimate_tokens(text))
        return text

    async def acomplete(self, prompt: str) -> str:
        return await asyncio.to_thread(self.complete, prompt)

    def _call(self, prompt: str, outcome: dict[str, Any]) -> None:
        try:
            if hasattr(self.llm, "complete_with_usage"):
                text, usage = self.llm.complete_with_usage(prompt)
            elif hasattr(self.llm, "complete"):
                text, usage = self.llm.complete(prompt), {}
            else:
                text, usage = asyncio.run(self.llm.acomplete(prompt)), {}
            if not isinstance(text, str):
                raise TypeError(f"complete() returned {type(text).__name__}, not str")
            outcome["result"] = (text, dict(usage or {}))
        except Exception as exc:  # handed to the caller's thread
            outcome["error"] = exc

    def _count(self, **counts: int) -> None:
        record_usage(**counts)
        with self._lock:
            for name, value in counts.items():
                self.totals[name] += int(value)


# a dependency-free client for local OpenAI-compatible servers ---------------------------------
class OpenAICompatibleLLM:
    """Chat completions from an OpenAI-compatible server (llama.cpp, Ollama, vLLM) via urllib.

    `base_url` is the API root, e.g. `http://127.0.0.1:8080/v1`.
    """

    def __init__(self, base_url: str, model: str = "default", *, api_key: str | None = None,
                 max_tokens: int = 512, temperature: float = 0.0, timeout: float = 120.0
                 ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key = model, api_key
        self.max_tokens, self.temperature, self.timeout = max_tokens, temperature, timeout

    def complete(self, prompt: str) -> str:
        return self.complete_with_usage(prompt)[0]

    def complete_with_usage(self, prompt: str) -> tuple[str, dict[str, int]]:
        body = json.dumps({"model": self.model, "max_tokens": self.max_tokens,
                           "temperature": self.temperature,
                           "messages": [{"role": "user", "content": prompt}]}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, body, headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data = json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            raise LLMError(f"{self.url}: {exc}") from exc
        try:
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.url} answered without a completion: {str(data)[:300]}") \
                from exc
        usage = data.get("usage") or {}
        return text, {"prompt_tokens": int(usage.get("prompt_tokens") or 0),
                      "completion_tokens": int(usage.get("completion_tokens") or 0)}
