"""`agent_memory_tools` (LangMem-style `manage_memory`/`search_memory`) in a real
`create_agent` graph that serves two users with one set of tools; real SQLite memory and
embedder, the chat model is the scripted recording fake."""

from __future__ import annotations

import json

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage

from langchain_rmm import agent_memory_tools
from rmm_core.errors import InvalidInputError


def calls(name: str, **args) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c-{name}",
                                              "type": "tool_call"}])


def tool_output(result) -> str:
    return next(m for m in result["messages"] if m.type == "tool").text


def run(agent, text: str, user: str | None, **configurable):
    config = {"configurable": {**({"user_id": user} if user else {}), **configurable}}
    return agent.invoke({"messages": [("user", text)]}, config=config)


def test_one_agent_many_users_each_run_writes_and_reads_its_own(mem, chat_model):
    model = chat_model(
        calls("manage_memory", content="I am allergic to peanuts."), "Saved.",
        calls("search_memory", query="allergies"), "You are allergic to peanuts.",
        calls("search_memory", query="allergies"), "I know of none.")
    agent = create_agent(model, tools=agent_memory_tools(mem))
    assert tool_output(run(agent, "remember my allergy", "u1")).startswith("created memory")
    (memory,) = mem.memories(user_id="u1")
    assert memory.text == "I am allergic to peanuts."

    found = json.loads(tool_output(run(agent, "my allergies?", "u1")))
    assert found[0]["id"] == memory.id
    assert "peanuts" in found[0]["content"]
    assert json.loads(tool_output(run(agent, "my allergies?", "u2"))) == []


def test_update_and_delete_by_id_and_errors_go_back_to_the_model(mem, chat_model):
    (memory,) = mem.add("I live in Porto.", user_id="u1")
    model = chat_model(
        calls("manage_memory", action="update", id=memory.id, content="I live in Lisbon."),
        "Updated.",
        calls("manage_memory", action="delete", id="no-such-id"), "Oops.",
        calls("manage_memory", action="delete", id=memory.id), "Deleted.")
    agent = create_agent(model, tools=agent_memory_tools(mem))
    assert tool_output(run(agent, "I moved", "u1")) == f"updated memory {memory.id}"
    assert [v.text for v in mem.history(memory.id, user_id="u1")] == [
        "I live in Porto.", "I live in Lisbon."]
    assert tool_output(run(agent, "forget x", "u1")).startswith("Error:")
    assert tool_output(run(agent, "forget it", "u1")) == f"deleted memory {memory.id}"
    assert mem.memories(user_id="u1") == []


def test_another_users_memory_id_is_not_found(mem, chat_model):
    (memory,) = mem.add("I live in Porto.", user_id="u1")
    model = chat_model(calls("manage_memory", action="delete", id=memory.id), "Oops.")
    agent = create_agent(model, tools=agent_memory_tools(mem))
    assert tool_output(run(agent, "forget it", "u2")).startswith("Error:")
    assert len(mem.memories(user_id="u1")) == 1


def test_agent_scope_from_the_run(mem, chat_model):
    model = chat_model(calls("manage_memory", content="Prefers metric units."), "Saved.")
    agent = create_agent(model, tools=agent_memory_tools(mem))
    run(agent, "use metric", "u1", agent_id="coach")
    assert mem.memories(user_id="u1")[0].metadata == {"agent_id": "coach"}


@pytest.mark.parametrize("user", [None, 42])
def test_a_run_without_a_valid_user_fails_loudly(mem, chat_model, user):
    model = chat_model(calls("search_memory", query="anything"), "Hm.")
    agent = create_agent(model, tools=agent_memory_tools(mem))
    with pytest.raises(InvalidInputError, match="user_id"):
        agent.invoke({"messages": [("user", "hi")]},
                     config={"configurable": {} if user is None else {"user_id": user}})
