"""`RMMMiddleware`: reflective memory for agents built with `langchain.agents.create_agent`."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.config import get_config
from langgraph.runtime import Runtime
from typing_extensions import NotRequired

from rmm_core import Memory, ReflectiveMemory, SearchResult
from rmm_core.adapter_guard import check_arguments, guarded
from rmm_core.learn.attribute import cited_in
from rmm_core.read.ranked import CONTEXT_WORDS

from .converters import (
    ROLE_SPEAKERS,
    format_memories,
    latest_user_text,
    messages_to_turns,
    with_memories,
)
from .scope import RunScope, check_on_missing_user, run_scope

logger = logging.getLogger(__name__)

Handler = Callable[[ModelRequest], ModelResponse]
AsyncHandler = Callable[[ModelRequest], Awaitable[ModelResponse]]


class RMMState(AgentState):
    """Agent state plus where this run's messages begin (run-scoped, never checkpointed)."""

    rmm_boundary: NotRequired[Annotated[str | None, UntrackedValue, PrivateStateAttr]]


class RMMMiddleware(AgentMiddleware):
    """Recalls a user's memories into every model call and logs each run's turns.

    The user comes from the run (`context={"user_id": ...}`, a dict or an object with that
    attribute, or `config["configurable"]`/`["metadata"]`, see `langchain_rmm.scope`); the
    session is the thread (`configurable.thread_id`). Before each model call the memories
    relevant to the latest user message are appended to the system message; after the run
    its user and assistant messages with text are appended to the thread's session, which
    the core reflects when it ends (idle timeout, size threshold, or
    `memory.end_session(user_id=..., session_id=thread_id)`). A run without a thread is a
    session of its own, ended with the run (reflected by the memory's background worker
    when it has one, else at once).

    Errors (`rmm_core.adapter_guard`): a run without a user, or with an invalid id, raises
    `InvalidInputError` before the model is called (`on_missing_user="disable"` runs it
    without memory instead); any other failing memory call is logged and the agent goes on
    without memory, unless `strict=True`, which raises it.

    Each call recalls the best memories that fit `budget` words (default `CONTEXT_WORDS`,
    1,000 words, about 1,300 tokens), at most `k` of them when `k` is given; `budget=None`
    with `k` recalls `k` memories whatever their size.

    `citations=True` asks the model to cite memories by number and feeds the citations of
    its final answer to the reranker (`memory.feedback`, RMM's retrospective reflection).
    """

    state_schema = RMMState

    def __init__(self, memory: ReflectiveMemory | str, *, budget: int | None = CONTEXT_WORDS,
                 k: int | None = None, user_key: str = "user_id",
                 speakers: Mapping[str, str] = ROLE_SPEAKERS,
                 citations: bool = False, on_missing_user: str = "raise",
                 strict: bool = False) -> None:
        if isinstance(memory, str):  # a path or database URL: open it with the defaults
            memory = ReflectiveMemory.open(memory)
        check_arguments({"memory": memory, "k": k, "budget": budget, "speakers": speakers},
                        counts=(), optional=("k", "budget"), needs_user=False)
        self.memory, self.k, self.budget, self.user_key = memory, k, budget, user_key
        self.speakers, self.citations, self.strict = dict(speakers), citations, strict
        self.on_missing_user = check_on_missing_user(on_missing_user)

    def end_session(self, *, user_id: str, thread_id: str, wait: bool = True) -> list[Memory]:
        """End a thread's session and reflect it now (`wait=False`: leave it to the memory's
        background worker); returns the memories added or merged. The same as
        `memory.end_session(user_id=..., session_id=thread_id)`."""
        return self.memory.end_session(user_id=user_id, session_id=thread_id, wait=wait)

    # recall: every model call -----------------------------------------------------------
    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> Any:
        recalled = self._recall(request)
        response = handler(self._with_memories(request, recalled))
        if recalled and self.citations:
            self._feedback(recalled, response)
        return response

    async def awrap_model_call(self, request: ModelRequest, handler: AsyncHandler) -> Any:
        recalled = await asyncio.to_thread(self._recall, request)
        response = await handler(self._with_memories(request, recalled))
        if recalled and self.citations:
            await asyncio.to_thread(self._feedback, recalled, response)
        return response

    # log: once per run -------------------------------------------------------------------
    def before_agent(self, state: RMMState, runtime: Runtime) -> dict[str, Any]:
        self._scope(runtime)  # a run without a valid user fails here, before any model call
        return {"rmm_boundary": _boundary(state["messages"])}

    async def abefore_agent(self, state: RMMState, runtime: Runtime) -> dict[str, Any]:
        return self.before_agent(state, runtime)

    def after_agent(self, state: RMMState, runtime: Runtime) -> None:
        self._save(state, runtime, _thread_id())

    async def aafter_agent(self, state: RMMState, runtime: Runtime) -> None:
        await asyncio.to_thread(self._save, state, runtime, _thread_id())

    # internals ---------------------------------------------------------------------------
    def _scope(self, runtime: Runtime | None) -> RunScope | None:
        return run_scope(getattr(runtime, "context", None), _config(), user_key=self.user_key,
                         on_missing_user=self.on_missing_user)

    def _guarded(self, what: str, call: Callable[[], Any]) -> Any:
        return guarded(call, strict=self.strict, what=what, logger=logger)

    def _recall(self, request: ModelRequest) -> SearchResult | None:
        scope = self._scope(request.runtime)
        query = latest_user_text(request.messages)
        if scope is None or not query:
            return None
        # the thread's own turns still waiting for reflection are in its messages already
        return self._guarded("recall failed", lambda: self.memory.search(
            query, user_id=scope.user_id, k=self.k, max_words=self.budget,
            agent_id=scope.agent_id,
            run_id=scope.run_id, session_id=_thread_id()))

    def _with_memories(self, request: ModelRequest, recalled: SearchResult | None
                       ) -> ModelRequest:
        if not recalled:
            return request
        block = format_memories(recalled.hits, cite=self.citations)
        return request.override(system_message=with_memories(request.system_message, block))

    def _save(self, state: RMMState, runtime: Runtime, thread_id: str | None) -> None:
        scope = self._scope(runtime)
        if scope is None:
            return
        messages = _run_messages(state["messages"], state.get("rmm_boundary"))
        turns = messages_to_turns(messages, self.speakers)
        if not turns:
            return
        session_id = thread_id or uuid.uuid4().hex

        def log() -> None:
            self.memory.append(turns, user_id=scope.user_id, session_id=session_id,
                               agent_id=scope.agent_id, run_id=scope.run_id)
            if thread_id is None:
                self.memory.end_session(user_id=scope.user_id, session_id=session_id,
                                        wait=not self.memory.config.sessions.background_reflection)

        self._guarded(f"could not log this run's {len(turns)} turns for session "
                      f"{session_id!r}", log)

    def _feedback(self, recalled: SearchResult, response: Any) -> None:
        answer = _final_answer(response)
        if answer is not None:
            self._guarded("reranker feedback failed",
                          lambda: self.memory.feedback(recalled, cited=cited_in(answer, recalled)))


def _config() -> Mapping[str, Any] | None:
    """The running graph's config; None outside a runnable context."""
    try:
        return get_config()
    except RuntimeError:
        return None


def _thread_id() -> str | None:
    """The run's `configurable.thread_id` as a string; None when the run has none."""
    thread = ((_config() or {}).get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)


def _boundary(messages: Sequence[BaseMessage]) -> str:
    """Id of the last AI message before this run ('' when there is none): what follows it
    is this run's (earlier messages were logged by earlier runs, or resent by the caller)."""
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message.id or ""
    return ""


def _run_messages(messages: Sequence[BaseMessage], boundary: str | None) -> list[BaseMessage]:
    """This run's messages: those after the boundary. When it is unknown (a run resumed from
    a checkpoint) or gone (history trimmed), those from the last user message on."""
    if boundary == "":
        return list(messages)
    ids = [m.id for m in messages]
    if boundary is not None and boundary in ids:
        return list(messages[ids.index(boundary) + 1:])
    humans = [i for i, m in enumerate(messages) if m.type == "human"]
    return list(messages[humans[-1]:]) if humans else []


def _final_answer(response: Any) -> str | None:
    """The text of a model response that answers (no tool calls); None otherwise."""
    if isinstance(response, ExtendedModelResponse):
        response = response.model_response
    messages = response.result if isinstance(response, ModelResponse) else [response]
    answers = [m for m in messages if isinstance(m, AIMessage)]
    if not answers or answers[-1].tool_calls or not answers[-1].text.strip():
        return None
    return answers[-1].text

