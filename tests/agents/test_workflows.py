"""Agent Workflow Memory: induction (rule and scripted LLM), online/offline modes, dedup,
per-owner storage, retrieval, and the LangChain / LlamaIndex adapters.

`rmm_core.testing.ScriptedLLM` stands in for the LLM in the induction and judging tests,
the frameworks' fake chat models for the agents'; the slow test runs the real local LLM.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rmm_core import ReflectiveMemory
from rmm_core.agents.workflows import (
    Step,
    Trajectory,
    Workflow,
    WorkflowMemory,
    abstract,
    parse_workflows,
)
from rmm_core.errors import InvalidInputError
from rmm_core.models.parse import ParseError
from rmm_core.storage.base import user_state_name
from rmm_core.testing import ScriptedLLM

FLIGHT_1 = {"task": "Book a flight from Paris to Berlin on 12 May", "steps": [
    {"observation": "home page",
     "action": "search_flights(origin='Paris', destination='Berlin', date='12 May')"},
    {"observation": "3 results", "reasoning": "the cheapest is 89 EUR",
     "action": "select_flight(id=4411)"},
    {"action": "pay(card='visa')"}], "outcome": "Booked flight 4411.", "success": True}
FLIGHT_2 = {"task": "Book a flight from Rome to Oslo on 3 June", "steps": [
    {"action": "search_flights(origin='Rome', destination='Oslo', date='3 June')"},
    {"action": "select_flight(id=1270)"}, {"action": "pay(card='visa')"}],
    "outcome": "Booked flight 1270."}
WEATHER_FAIL = {"task": "Find the weather in Tokyo",
                "steps": [{"action": "get_weather(city='Tokyo')"}],
                "outcome": "error: the weather service is unavailable"}


@pytest.fixture
def mem(embedder):
    memory = ReflectiveMemory.open(":memory:", embedder=embedder)
    yield memory
    memory.close()


def test_abstraction_uses_one_placeholder_per_value():
    names: dict[str, str] = {}
    task = abstract("Email Dana Smith at dana@example.com about order 5521", names)
    step = abstract("send_email(to='dana@example.com', subject='Order 5521')", names)
    assert task == "Email {name_1} at {email_1} about order {number_1}"
    assert step == "send_email(to={email_1}, subject={value_1})"


def test_offline_induction_dedups_and_skips_failures(mem):
    flows = mem.workflows.induce([FLIGHT_1, FLIGHT_2, WEATHER_FAIL], user_id="u")
    assert len(flows) == 1
    [flow] = mem.workflows.workflows(user_id="u")
    assert flow.support == 2
    assert len(flow.sources) == 2
    assert flow.description == "Book a flight from {name_1} to {name_2} on {date_1}"
    assert flow.steps[0] == "search_flights(origin={name_1}, destination={name_2}, date={date_1})"
    assert "Paris" not in json.dumps(flow.steps)
    assert "4411" not in json.dumps(flow.steps)


def test_online_record_adds_only_successful_runs_and_owners_are_isolated(mem):
    assert mem.workflows.record(WEATHER_FAIL, agent_id="bot") == []
    assert mem.workflows.record(FLIGHT_1, agent_id="bot")
    assert len(mem.workflows.workflows(agent_id="bot")) == 1
    assert mem.workflows.workflows(user_id="bot") == []
    hits = mem.workflows.search("Book a flight from Madrid to Lisbon", agent_id="bot")
    cake = mem.workflows.search("bake a chocolate cake", agent_id="bot", min_score=-1.0)
    assert hits
    assert hits[0].score > cake[0].score + 0.2
    assert mem.workflows.search("bake a chocolate cake", agent_id="bot") == []
    assert "Workflow: Book a flight" in mem.workflows.prompt("fly to Rome", agent_id="bot")


def test_forget_user_drops_their_workflows(mem):
    mem.workflows.induce([FLIGHT_1], user_id="u")
    mem.workflows.induce([FLIGHT_1], user_id="v")
    mem.forget(user_id="u")
    assert mem.workflows.workflows(user_id="u") == []
    assert len(mem.workflows.workflows(user_id="v")) == 1
    # the emptied row is named by a hash of the id, not by the id
    assert mem.store.load_state(user_state_name("u", "workflows"))[1] == b""
    assert mem.store.load_state("workflows/user/u") == (0, None)


def test_bad_input_is_a_typed_error(mem):
    with pytest.raises(InvalidInputError, match="exactly one"):
        mem.workflows.induce([FLIGHT_1])
    with pytest.raises(InvalidInputError, match="exactly one"):
        mem.workflows.search("x", user_id="u", agent_id="a")
    with pytest.raises(InvalidInputError, match="task"):
        mem.workflows.record({"task": " ", "steps": []}, user_id="u")
    with pytest.raises(InvalidInputError, match="unknown trajectory"):
        mem.workflows.record({**FLIGHT_1, "extra": 1}, user_id="u")
    with pytest.raises(InvalidInputError, match="step"):
        mem.workflows.record({"task": "t", "steps": ["click"]}, user_id="u")
    assert mem.workflows.workflows(user_id="u") == []


# LLM induction with a scripted LLM --------------------------------------------------------------
FLIGHT_WORKFLOW = json.dumps([{"description": "Book a flight between two cities",
                               "steps": ["search_flights({origin}, {destination}, {date})",
                                         "select the cheapest {flight_id}", "pay"]}])


def _judge(prompt: str) -> str:
    """The success judgement: a run succeeded when its record says it booked."""
    return "Yes." if "Booked" in prompt else "No"


def test_llm_induction_and_judge(embedder):
    llm = ScriptedLLM(induce_workflows=[FLIGHT_WORKFLOW], task_succeeded=[_judge])
    mem = ReflectiveMemory.open(":memory:", embedder=embedder, llm=llm)
    flows = mem.workflows.induce([{**FLIGHT_1, "success": None}, FLIGHT_2, WEATHER_FAIL],
                                 user_id="u")
    assert [f.description for f in flows] == ["Book a flight between two cities"]
    assert llm.tasks().count("task_succeeded") == 3
    [induce_prompt] = llm.prompts("induce_workflows")
    assert "Paris" in induce_prompt
    assert "Tokyo" not in induce_prompt
    assert mem.workflows.record(FLIGHT_2, user_id="u")[0].support == 2


def test_parse_workflows_rejects_bad_answers():
    with pytest.raises(ParseError, match="steps"):
        parse_workflows('[{"description": "x", "steps": []}]', [])
    with pytest.raises(ParseError, match="description"):
        parse_workflows('[{"steps": ["a"]}]', [])
    [flow] = parse_workflows('Sure!\n```json\n[{"description": "d", "steps": ["a", "b"]}]\n```',
                             ["t1"])
    assert flow.steps == ["a", "b"]
    assert flow.sources == ["t1"]


def test_add_handwritten_workflow(mem):
    mem.workflows.add([Workflow("Reset a user's password", ["open admin", "reset {user}"])],
                      agent_id="a")
    with pytest.raises(InvalidInputError):
        mem.workflows.add(["not a workflow"], agent_id="a")
    assert mem.workflows.search("reset the password of Bob", agent_id="a")


# adapters ----------------------------------------------------------------------------------------
def test_langchain_middleware_injects_and_records(mem):
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from langchain_rmm import WorkflowMiddleware
    from langchain_rmm.workflows import run_trajectory

    class Recording(FakeMessagesListChatModel):
        seen: list = []

        def _generate(self, messages: Any, *args: Any, **kwargs: Any):
            self.seen.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

        def bind_tools(self, tools: Any, **kwargs: Any) -> Recording:
            return self

    @tool
    def search_flights(origin: str, destination: str) -> str:
        """Search flights."""
        return "flight 77 at 9:00"

    mem.workflows.induce([FLIGHT_1], user_id="u1")
    call = AIMessage(content="Searching.", tool_calls=[{
        "name": "search_flights", "args": {"origin": "Rome", "destination": "Oslo"},
        "id": "c1", "type": "tool_call"}])
    model = Recording(responses=[call, AIMessage(content="Booked flight 77.")])
    agent = create_agent(model, tools=[search_flights], system_prompt="You are a travel agent.",
                         middleware=[WorkflowMiddleware(mem)])
    state = agent.invoke(
        {"messages": [{"role": "user", "content": "Book a flight from Rome to Oslo"}]},
        context={"user_id": "u1"})
    system = model.seen[0][0]
    assert system.type == "system"
    assert system.text.startswith("You are a travel agent.")
    assert "Workflow: Book a flight from {name_1}" in system.text
    assert sum(f.support for f in mem.workflows.workflows(user_id="u1")) == 2  # run recorded
    trajectory = run_trajectory(state["messages"])
    assert trajectory.task == "Book a flight from Rome to Oslo"
    assert [s.action for s in trajectory.steps] == [
        "search_flights(origin='Rome', destination='Oslo')", "answer"]
    assert trajectory.steps[1].observation == "search_flights -> flight 77 at 9:00"
    assert trajectory.outcome == "Booked flight 77."


async def test_llamaindex_hook_injects_and_records(mem):
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
    from llama_index.core.tools import FunctionTool

    from llamaindex_rmm import WorkflowAgentHook

    def get_weather(city: str = "Porto") -> str:
        """Today's weather in a city."""
        return f"Sunny in {city}."

    mem.workflows.add([Workflow("Report the weather of a city", ["get_weather({city})",
                                                                 "answer with the forecast"])],
                      agent_id="weather-bot")
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(get_weather)], llm=llm,
                          system_prompt="Be brief.")
    hook = WorkflowAgentHook(mem, agent_id="weather-bot")
    result = await hook.run(agent, "What is the weather in Porto today?")
    seen = llm.last_chat_messages
    assert "Workflow: Report the weather of a city" in seen[0].content
    assert agent.system_prompt == "Be brief."
    trajectory = hook.last_trajectory
    assert trajectory.outcome == str(result)
    assert trajectory.steps[0].action.startswith("get_weather(")
    assert any(isinstance(s, Step) and "Sunny in Porto." in s.observation
               for s in trajectory.steps)
    assert len(mem.workflows.workflows(agent_id="weather-bot")) == 2


def test_trajectory_coerce_round_trip():
    t = Trajectory.coerce(FLIGHT_1)
    assert Trajectory.coerce(t).steps == t.steps
    assert "Step 2." in t.render()


@pytest.mark.slow
def test_real_local_llm_induces_a_workflow(embedder):
    local_llm = pytest.importorskip("rmm_core.models.local_llm")
    try:
        llm = local_llm.LocalLLM(max_tokens=400)
    except Exception as exc:
        pytest.skip(f"local LLM unavailable: {exc}")
    wm = WorkflowMemory(ReflectiveMemory.open(":memory:", embedder=embedder).store, embedder,
                        llm=llm)
    flows = wm.induce([FLIGHT_1, FLIGHT_2], user_id="u")
    assert flows
    assert all(f.description and f.steps for f in flows)
    text = json.dumps([f.steps for f in flows])
    assert "4411" not in text
    assert "1270" not in text
    assert wm.search("Book a flight from Madrid to Lisbon", user_id="u", min_score=0.2)
