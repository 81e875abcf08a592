"""`WorkflowMiddleware`: Agent Workflow Memory for agents built with `create_agent`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain.agents.middleware.types import AgentMiddleware, AgentState, ModelRequest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.runtime import Runtime

from rmm_core import ReflectiveMemory
from rmm_core.agents.workflows import (
    Step,
    Trajectory,
    WorkflowMemory,
    as_workflow_memory,
    owner_key,
)

from .converters import with_memories

logger = logging.getLogger(__name__)


class WorkflowMiddleware(AgentMiddleware):
    """Injects the workflows relevant to a run's task into the system message of every model
    call, and records the run as a trajectory that is induced into workflows when judged
    successful (online AWM).

    Workflows belong to `agent_id` when given, else to the run context's user
    (`context={"user_id": ...}`). The task is the run's last user message. Failures are
    logged, never raised: the agent runs on without workflow memory.
    """

    def __init__(self, memory: ReflectiveMemory | WorkflowMemory, *, agent_id: str | None = None,
                 user_key: str = "user_id", k: int = 3, min_score: float = 0.3,
                 online: bool = True) -> None:
        memory = as_workflow_memory(memory)
        if agent_id is not None:
            owner_key(None, agent_id)
        self.workflows, self.agent_id, self.user_key = memory, agent_id, user_key
        self.k, self.min_score, self.online = k, min_score, online

    def wrap_model_call(self, request: ModelRequest, handler: Callable) -> Any:
        return handler(self._inject(request, self._prompt(request)))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[Any]]) -> Any:
        block = await asyncio.to_thread(self._prompt, request)
        return await handler(self._inject(request, block))

    def after_agent(self, state: AgentState, runtime: Runtime) -> None:
        self._record(state["messages"], runtime)

    async def aafter_agent(self, state: AgentState, runtime: Runtime) -> None:
        await asyncio.to_thread(self._record, state["messages"], runtime)

    # internals ------------------------------------------------------------------------------
    def _owner(self, runtime: Runtime | None) -> dict[str, str] | None:
        if self.agent_id is not None:
            return {"agent_id": self.agent_id}
        context = getattr(runtime, "context", None)
        user_id = (context.get(self.user_key) if isinstance(context, Mapping)
                   else getattr(context, self.user_key, None))
        return {"user_id": user_id} if user_id is not None else None

    def _prompt(self, request: ModelRequest) -> str:
        owner = self._owner(request.runtime)
        task = run_trajectory(request.messages)
        if owner is None or task is None:
            return ""
        try:
            return self.workflows.prompt(task.task, k=self.k, min_score=self.min_score, **owner)
        except Exception:
            logger.exception("workflow memory: retrieval failed; the model is called without it")
            return ""

    @staticmethod
    def _inject(request: ModelRequest, block: str) -> ModelRequest:
        if not block:
            return request
        return request.override(system_message=with_memories(request.system_message, block))

    def _record(self, messages: Sequence[BaseMessage], runtime: Runtime) -> None:
        owner = self._owner(runtime)
        trajectory = run_trajectory(messages)
        if not self.online or owner is None or trajectory is None:
            return
        try:
            self.workflows.record(trajectory, **owner)
        except Exception:
            logger.exception("workflow memory: could not record this run's trajectory")


def run_trajectory(messages: Sequence[BaseMessage]) -> Trajectory | None:
    """The run as a trajectory: task = the last user message; one step per AI message after
    it (reasoning = its text, action = its tool calls or "answer"), observation = the tool
    results it saw; outcome = the final AI text. None when there is no user message."""
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    if not humans or not messages[humans[-1]].text.strip():
        return None
    start = humans[-1]
    steps: list[Step] = []
    seen: list[str] = []
    outcome = ""
    for message in messages[start + 1:]:
        if isinstance(message, ToolMessage):
            seen.append(f"{message.name or 'tool'} -> {message.text}")
        elif isinstance(message, AIMessage):
            calls = [f"{c['name']}({_args(c.get('args') or {})})" for c in message.tool_calls]
            steps.append(Step(observation="\n".join(seen), reasoning=message.text,
                              action="; ".join(calls) if calls else "answer"))
            seen = []
            if not calls:
                outcome = message.text
    return Trajectory(task=messages[start].text.strip(), steps=steps, outcome=outcome)


def _args(args: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())
