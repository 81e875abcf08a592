"""Whose memory a `create_agent` run uses, and the error policy, in real agent graphs with a
real memory and embedder; the chat model is the scripted recording fake in every test."""

from __future__ import annotations

import logging

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from langchain_rmm import RMMMiddleware
from rmm_core.errors import InvalidInputError

FACT = "My dog is a beagle called Biscuit and he loves carrots."
QUESTION = "What is the name of my dog?"


def ask(agent, text: str = QUESTION, **run):
    return agent.invoke({"messages": [{"role": "user", "content": text}]}, **run)


@pytest.mark.parametrize("run", [
    {"config": {"configurable": {"user_id": "u1", "thread_id": "t"}}},  # LangMem's convention
    {"config": {"metadata": {"user_id": "u1"}, "configurable": {"thread_id": "t"}}},
    {"context": {"user_id": "u1"}, "config": {"configurable": {"thread_id": "t"}}},
], ids=["configurable", "metadata", "context"])
def test_user_is_read_where_langchain_users_put_it(mem, chat_model, run):
    mem.add_session([{"speaker": "user", "text": FACT}], user_id="u1")
    model = chat_model("Biscuit.")
    agent = create_agent(model, middleware=[RMMMiddleware(mem)], checkpointer=InMemorySaver())
    ask(agent, **run)
    assert "Biscuit" in model.system_prompt()
    assert [t.text for t in mem.turns(user_id="u1", session_id="t")] == [QUESTION, "Biscuit."]


def test_the_context_wins_over_configurable(mem, chat_model):
    agent = create_agent(chat_model("Hi."), middleware=[RMMMiddleware(mem)])
    ask(agent, "hello", context={"user_id": "ctx"},
        config={"configurable": {"user_id": "cfg", "thread_id": "t"}})
    assert mem.store.users() == ["ctx"]


@pytest.mark.parametrize(("context", "configurable"), [
    (None, {}),
    ({"user_id": 42}, {}),
    ({"user_id": ""}, {}),
    (None, {"user_id": "   "}),
    ({"user_id": "u1", "agent_id": 7}, {}),
], ids=["missing", "int", "empty", "blank", "bad-agent"])
def test_a_missing_or_invalid_id_fails_before_the_model_is_called(mem, chat_model, context,
                                                                 configurable):
    model = chat_model("Hi.")
    agent = create_agent(model, middleware=[RMMMiddleware(mem)], checkpointer=InMemorySaver())
    with pytest.raises(InvalidInputError, match="user_id|agent_id"):
        ask(agent, context=context, config={"configurable": {"thread_id": "t", **configurable}})
    assert model.seen == []
    assert mem.store.users() == []


def test_on_missing_user_disable_runs_without_memory(mem, chat_model, caplog):
    agent = create_agent(chat_model("Hi."),
                         middleware=[RMMMiddleware(mem, on_missing_user="disable")])
    with caplog.at_level(logging.WARNING, logger="langchain_rmm.scope"):
        out = ask(agent, "hello")
    assert out["messages"][-1].text == "Hi."
    assert "user_id" in caplog.text
    assert mem.store.users() == []
    with pytest.raises(InvalidInputError):  # disable covers a missing id, not a wrong one
        ask(agent, "hello", context={"user_id": 42})


def test_bad_on_missing_user_is_a_typed_error(mem):
    with pytest.raises(InvalidInputError, match="disable"):
        RMMMiddleware(mem, on_missing_user="ignore")


def test_strict_raises_memory_failures_instead_of_logging_them(mem, chat_model, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(mem, "search", broken)
    agent = create_agent(chat_model("Hi."), middleware=[RMMMiddleware(mem, strict=True)])
    with pytest.raises(RuntimeError, match="disk on fire"):
        ask(agent, context={"user_id": "u1"})


def test_bad_input_raises_even_when_not_strict(mem, chat_model):
    agent = create_agent(chat_model("Hi."), middleware=[RMMMiddleware(mem)])
    with pytest.raises(InvalidInputError):
        ask(agent, "x" * 4_000_001, context={"user_id": "u1"})
    assert mem.store.users() == []


def test_agent_scope_from_the_run_tags_and_narrows_memories(mem, chat_model):
    model = chat_model("Noted.", "Biscuit.", "No idea.")
    agent = create_agent(model, middleware=[RMMMiddleware(mem)])
    ask(agent, FACT, context={"user_id": "u1", "agent_id": "vet"})  # no thread: reflected
    assert {m.metadata.get("agent_id") for m in mem.memories(user_id="u1")} == {"vet"}
    ask(agent, context={"user_id": "u1", "agent_id": "vet"})
    assert "Biscuit" in model.system_prompt()
    ask(agent, context={"user_id": "u1", "agent_id": "chef"})
    assert "Biscuit" not in model.system_prompt()
