"""The one LLM interface the core knows: `complete(prompt) -> str` (async when offered)."""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future, wait
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import InvalidInputError, LLMError
from ..text import count_tokens
from .adapters import AdapterRegistry

if TYPE_CHECKING:
    from ..config import MemoryConfig


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


ADAPTER_GROUP = "rmm_core.llm_adapters"
"""Entry-point group of LLM adapters: each entry's name is a framework's top-level package
(`langchain_core`, `llama_index`, ...), its value a `wrap(obj) -> LLM` for that framework's
LLM objects. The adapter packages declare theirs; the core names none of them."""

_ADAPTERS: AdapterRegistry[LLM] = AdapterRegistry(ADAPTER_GROUP)


def register_llm_adapter(package: str, wrap: Callable[[Any], LLM]) -> None:
    """Make `as_llm` hand objects whose class comes from top-level `package` to `wrap` (what
    an entry point in `ADAPTER_GROUP` declares, for code that is not installed as one)."""
    _ADAPTERS.register(package, wrap)


def as_llm(obj: Any) -> LLM:
    """Coerce a LangChain chat model, a LlamaIndex LLM (or any framework's LLM with a
    registered adapter), an object with `complete`, or a callable into an `LLM`."""
    wrap = _ADAPTERS.find(obj)
    if wrap is not None:
        return wrap(obj)
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
_TIMED_OUT: ContextVar[list[str] | None] = ContextVar("rmm_llm_timed_out", default=None)


@contextmanager
def usage_scope(session_id: str = "", save: Callable[[dict[str, int]], None] | None = None
                ) -> Iterator[dict[str, int]]:
    """Count the LLM usage of one operation (a reflection, a `respond`, ...) done inside,
    and hand it to `save` at the end (when there was any), even if the operation failed.

    Once an LLM call inside has timed out, the operation's later calls fail at once, so a
    hung LLM costs one operation one `stages.llm_timeout`, not one per call."""
    tally = dict.fromkeys(USAGE_FIELDS, 0)
    tokens = _TALLY.set(tally), _SESSION.set(session_id), _TIMED_OUT.set([])
    try:
        yield tally
    finally:
        _TALLY.reset(tokens[0])
        _SESSION.reset(tokens[1])
        _TIMED_OUT.reset(tokens[2])
        if save is not None and any(tally.values()):
            save(tally)


def start_usage(session_id: str = "") -> dict[str, int]:
    """Start counting LLM usage for the work done next in this context (until replaced)."""
    tally = dict.fromkeys(USAGE_FIELDS, 0)
    _TALLY.set(tally)
    _SESSION.set(session_id)
    return tally


def current_session() -> str:
    """The session whose reflection is running in this context ("" outside one)."""
    return _SESSION.get()


def record_usage(**counts: int) -> None:
    """Add to the current tally (a no-op outside a usage scope)."""
    tally = _TALLY.get()
    if tally is not None:
        for name, value in counts.items():
            tally[name] = tally.get(name, 0) + int(value)


# the one way every caller reaches the LLM -------------------------------------------------------
Done = Callable[[], None]


class _Workers:
    """At most `size` daemon threads running queued jobs; idle ones exit after `idle` s.

    (`ThreadPoolExecutor` joins its threads at interpreter exit, so one LLM call that never
    returns would hang the process's exit.)"""

    def __init__(self, size: int, idle: float = 30.0) -> None:
        self.size, self.idle = size, idle
        self._jobs: queue.SimpleQueue[tuple[Future, Callable[[], Any], Done]] = \
            queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = self._waiting = 0

    def submit(self, fn: Callable[[], Any], done: Done) -> Future:
        """Run `fn` on a worker; `done()` follows once it finished or was cancelled unrun."""
        future: Future = Future()
        with self._lock:
            self._jobs.put((future, fn, done))
            if self._jobs.qsize() > self._waiting and self._threads < self.size:
                self._threads += 1
                threading.Thread(target=self._work, name="rmm-llm", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            with self._lock:
                self._waiting += 1
            try:
                future, fn, done = self._jobs.get(timeout=self.idle)
            except queue.Empty:
                with self._lock:
                    self._waiting -= 1
                    if self._jobs.empty():
                        self._threads -= 1
                        return
                continue
            with self._lock:
                self._waiting -= 1
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn())
                    except Exception as exc:  # handed to the caller's thread
                        future.set_exception(exc)
            finally:
                done()


class _EventLoop:
    """One long-lived event loop thread for LLMs that offer only `acomplete`; a timed-out
    call's task is cancelled (`future.stop()`)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def submit(self, make: Callable[[], Coroutine[Any, Any, Any]], done: Done) -> Future:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="rmm-llm-loop",
                                 daemon=True).start()
        loop, future = self._loop, Future()

        def start() -> None:
            if not future.set_running_or_notify_cancel():
                done()
                return
            task = loop.create_task(make())
            future.stop = lambda: loop.call_soon_threadsafe(task.cancel)
            task.add_done_callback(lambda t: (done(), _settle(t, future)))

        loop.call_soon_threadsafe(start)
        return future


def _settle(task: asyncio.Task, future: Future) -> None:
    if task.cancelled():
        future.set_exception(LLMError("the LLM call was cancelled"))
    elif task.exception() is not None:
        future.set_exception(task.exception())
    else:
        future.set_result(task.result())


class _Call:
    """One call's bookkeeping: finished yet, and abandoned by a timeout."""

    __slots__ = ("over", "abandoned")

    def __init__(self) -> None:
        self.over = self.abandoned = False


class MeteredLLM:
    """Every LLM call of a `ReflectiveMemory` goes through here: counted, bounded by
    `timeout` seconds, and failing only with `LLMError`.

    Calls run on at most `workers` threads (an `acomplete`-only LLM on one event loop, where
    a timed-out call is cancelled). A timed-out thread call keeps its worker until the LLM
    returns; while `workers` calls are stuck that way, further calls fail at once instead
    of piling up threads. Token counts come from `complete_with_usage(prompt) -> (text,
    {prompt_tokens, ...})` when the wrapped object offers it, else they are estimated.
    """

    def __init__(self, llm: Any, *, timeout: float | None = 120.0, workers: int = 4) -> None:
        self.llm, self.timeout, self.workers = llm, timeout, workers
        self.totals = dict.fromkeys(USAGE_FIELDS, 0)
        self._lock = threading.Lock()
        self._stuck = 0
        self._sync = hasattr(llm, "complete_with_usage") or hasattr(llm, "complete")
        self._runner = _Workers(workers) if self._sync else _EventLoop()

    def complete(self, prompt: str) -> str:
        timed_out = _TIMED_OUT.get()
        if timed_out:
            self._count(failures=1)
            raise LLMError(f"{timed_out[0]} earlier in this operation; not asking again")
        with self._lock:
            stuck = self._stuck if self._stuck >= self.workers else 0
        if stuck:
            self._count(failures=1)
            raise LLMError(f"{stuck} earlier LLM calls timed out and have not returned yet; "
                           f"not starting another")
        call = _Call()
        job = (lambda: self._call(prompt)) if self._sync else (lambda: self._acall(prompt))
        future = self._runner.submit(job, lambda: self._end(call))
        if not wait([future], self.timeout).done:
            self._abandon(call, future)
            self._count(calls=1, failures=1, prompt_tokens=count_tokens(prompt))
            message = f"the LLM did not answer within {self.timeout:g} s"
            if timed_out is not None:
                timed_out.append(message)
            raise LLMError(message)
        exc = future.exception()
        if exc is not None:
            self._count(calls=1, failures=1)
            if isinstance(exc, LLMError):
                raise exc
            raise LLMError(f"the LLM call failed: {type(exc).__name__}: {exc}") from exc
        text, usage = future.result()
        self._count(calls=1,
                    prompt_tokens=usage.get("prompt_tokens") or count_tokens(prompt),
                    completion_tokens=usage.get("completion_tokens") or count_tokens(text))
        return text

    async def acomplete(self, prompt: str) -> str:
        return await asyncio.to_thread(self.complete, prompt)

    def _abandon(self, call: _Call, future: Future) -> None:
        """Cancel a timed-out call: a queued one never runs and a coroutine is cancelled;
        a running thread cannot be stopped, so it counts as stuck until it returns."""
        if future.cancel():
            return
        with self._lock:
            if call.over:
                return
            call.abandoned = True
            self._stuck += 1
        getattr(future, "stop", lambda: None)()

    def _end(self, call: _Call) -> None:
        with self._lock:
            call.over = True
            if call.abandoned:
                self._stuck -= 1

    def _call(self, prompt: str) -> tuple[str, dict[str, int]]:
        if hasattr(self.llm, "complete_with_usage"):
            text, usage = self.llm.complete_with_usage(prompt)
        else:
            text, usage = self.llm.complete(prompt), {}
        return _checked(text), dict(usage or {})

    async def _acall(self, prompt: str) -> tuple[str, dict[str, int]]:
        return _checked(await self.llm.acomplete(prompt)), {}

    def _count(self, **counts: int) -> None:
        record_usage(**counts)
        with self._lock:
            for name, value in counts.items():
                self.totals[name] += int(value)


def _checked(text: Any) -> str:
    if not isinstance(text, str):
        raise TypeError(f"complete() returned {type(text).__name__}, not str")
    return text


def metered(llm: Any, config: MemoryConfig | None = None) -> MeteredLLM | None:
    """The user's `llm` (anything `as_llm` accepts) as the `MeteredLLM` every caller uses,
    with the config's `stages.llm_timeout` and `stages.llm_workers` (the defaults without one); None
    stays None and an already metered LLM is returned as it is."""
    if llm is None or isinstance(llm, MeteredLLM):
        return llm
    if config is None:
        return MeteredLLM(as_llm(llm))
    return MeteredLLM(as_llm(llm), timeout=config.stages.llm_timeout,
                      workers=config.stages.llm_workers)


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
