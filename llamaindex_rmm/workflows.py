"""`WorkflowAgentHook`: Agent Workflow Memory around a LlamaIndex workflow agent's run."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.agent.workflow import AgentOutput, ToolCallResult

from rmm_core import ReflectiveMemory
from rmm_core.agents.workflows import (
    Step,
    Trajectory,
    WorkflowMemory,
    as_workflow_memory,
    owner_key,
)
from rmm_core.errors import InvalidInputError


class WorkflowAgentHook:
    """Runs an agent (`FunctionAgent`, `ReActAgent`, …) on a task with the relevant
    workflows added to its system prompt, records the run's events as a trajectory, and
    (online) induces workflows from it when it is judged successful.

    Workflows belong to `user_id` or `agent_id` (exactly one). The agent's system prompt is
    restored after the run; runs through one hook are serialised for that reason.
    """

    def __init__(self, memory: ReflectiveMemory | WorkflowMemory, *, user_id: str | None = None,
                 agent_id: str | None = None, k: int = 3, min_score: float = 0.3,
                 online: bool = True) -> None:
        memory = as_workflow_memory(memory)
        owner_key(user_id, agent_id)
        self.workflows = memory
        self.owner = {"user_id": user_id} if user_id is not None else {"agent_id": agent_id}
        self.k, self.min_score, self.online = k, min_score, online
        self.last_trajectory: Trajectory | None = None
        self._lock = asyncio.Lock()

    def system_prompt(self, task: str, base: str | None = None) -> str:
        """`base` with the workflows relevant to `task` appended."""
        block = self.workflows.prompt(task, k=self.k, min_score=self.min_score, **self.owner)
        return "\n\n".join(p for p in (base or "", block) if p)

    async def run(self, agent: Any, task: str, **kwargs: Any) -> Any:
        """`agent.run(user_msg=task, **kwargs)` with workflows injected and the run recorded."""
        if not isinstance(task, str) or not task.strip():
            raise InvalidInputError("task must be a non-empty string")
        async with self._lock:
            original = agent.system_prompt
            agent.system_prompt = await asyncio.to_thread(self.system_prompt, task, original)
            try:
                handler = agent.run(user_msg=task, **kwargs)
                events = [event async for event in handler.stream_events()]
                result = await handler
            finally:
                agent.system_prompt = original
        self.last_trajectory = events_to_trajectory(task, events, result)
        if self.online:
            await self.workflows.arecord(self.last_trajectory, **self.owner)
        return result


def events_to_trajectory(task: str, events: Sequence[Any], result: Any = None) -> Trajectory:
    """A run's stream events as a trajectory: one step per `AgentOutput` (reasoning = its
    text, action = its tool calls or "answer"), observation = the `ToolCallResult`s before
    it; outcome = the final response."""
    steps: list[Step] = []
    seen: list[str] = []
    for event in events:
        if isinstance(event, ToolCallResult):
            seen.append(f"{event.tool_name} -> {event.tool_output}")
        elif isinstance(event, AgentOutput):
            calls = [f"{c.tool_name}({_args(c.tool_kwargs)})" for c in event.tool_calls]
            steps.append(Step(observation="\n".join(seen), reasoning=event.response.content or "",
                              action="; ".join(calls) if calls else "answer"))
            seen = []
    return Trajectory(task=task.strip(), steps=steps, outcome="" if result is None else str(result))


def _args(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (args or {}).items())
