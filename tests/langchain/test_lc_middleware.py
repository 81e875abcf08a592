"""`RMMMiddleware` inside real `create_agent` graphs; the chat model is a scripted fake that
records its prompts (every test here uses it), the memory and embedder are real."""

from __future__ import annotations

import logging

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langchain_rmm import RMMMiddleware
from rmm_core.errors import InvalidInputError

FACT = "My dog is a beagle called Biscuit and he loves carrots."
QUESTION = "What is the name of my dog?"


def user_says(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def run(agent, text: str, *, user: str | None, thread: str | None = None):
    config = {"configurable": {"thread_id": thread}} if thread else None
    context = {"user_id": user} if user else None
    return agent.invoke(user_says(text), config=config, context=context)


def test_fact_from_thread_a_reaches_thread_b_of_the_same_user_only(mem, chat_model):
    model = chat_model("Noted.", "Biscuit.", "I don't know.")
    agent = create_agent(model, middleware=[RMMMiddleware(mem)], checkpointer=InMemorySaver())
    run(agent, FACT, user="u1", thread="A")
    assert [(t.speaker, t.text) for t in mem.turns(user_id="u1", session_id="A")] == [
        ("user", FACT), ("assistant", "Noted.")]
    mem.end_session(user_id="u1", session_id="A")

    run(agent, QUESTION, user="u1", thread="B")
    assert "Biscuit" in model.system_prompt()
    run(agent, QUESTION, user="u2", thread="C")
    assert "Biscuit" not in model.system_prompt()
    assert mem.turns(user_id="u2", session_id="C")[0].text == QUESTION


def test_the_middleware_itself_ends_a_threads_session(mem, chat_model):
    middleware = RMMMiddleware(mem)
    agent = create_agent(chat_model("Noted."), middleware=[middleware],
                         checkpointer=InMemorySaver())
    run(agent, FACT, user="u1", thread="A")
    assert mem.memories(user_id="u1") == []  # logged, not reflected yet
    added = middleware.end_session(user_id="u1", thread_id="A")
    assert added
    assert any("Biscuit" in m.text for m in mem.memories(user_id="u1"))
    assert middleware.end_session(user_id="u1", thread_id="A") == []  # already ended


def test_each_run_logs_only_its_own_turns(mem, chat_model):
    agent = create_agent(chat_model("one", "two"), middleware=[RMMMiddleware(mem)],
                         checkpointer=InMemorySaver())
    run(agent, "first question", user="u1", thread="t")
    run(agent, "second question", user="u1", thread="t")
    texts = [t.text for t in mem.turns(user_id="u1", session_id="t")]
    assert texts == ["first question", "one", "second question", "two"]


def test_history_resent_without_thread_is_not_logged_again_and_run_is_reflected(
        mem, chat_model):
    agent = create_agent(chat_model("Carrots, I remember."), middleware=[RMMMiddleware(mem)])
    history = [{"role": "user", "content": "old question"},
               {"role": "assistant", "content": "old answer"},
               {"role": "user", "content": "What does Biscuit love?"}]
    agent.invoke({"messages": history}, context={"user_id": "u1"})
    turns = mem.turns(user_id="u1")
    assert [t.text for t in turns] == ["What does Biscuit love?", "Carrots, I remember."]
    memories = mem.memories(user_id="u1")
    assert memories
    assert set(memories[0].refs) == {t.id for t in turns}


def test_tool_plumbing_is_not_logged(mem, chat_model):
    @tool
    def lookup(name: str) -> str:
        """Look a name up."""
        return "TOOL-OUTPUT"

    call = AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"name": "x"},
                                              "id": "c1", "type": "tool_call"}])
    model = chat_model(call, "Found it.")
    agent = create_agent(model, tools=[lookup], middleware=[RMMMiddleware(mem)],
                         checkpointer=InMemorySaver())
    run(agent, "look x up", user="u1", thread="t")
    assert [(t.speaker, t.text) for t in mem.turns(user_id="u1", session_id="t")] == [
        ("user", "look x up"), ("assistant", "Found it.")]
    assert len(model.seen) == 2


def test_recall_keeps_the_agents_own_system_prompt(mem, chat_model):
    mem.add_session([{"speaker": "user", "text": FACT}], user_id="u1")
    model = chat_model("Biscuit.")
    agent = create_agent(model, system_prompt="You are Ava, a kind assistant.",
                         middleware=[RMMMiddleware(mem, k=1)])
    run(agent, QUESTION, user="u1")
    prompt = model.system_prompt()
    assert prompt.startswith("You are Ava, a kind assistant.")
    assert "[1]" in prompt
    assert "Biscuit" in prompt
    assert "[2]" not in prompt


def test_size_threshold_reflects_a_thread_without_an_explicit_end(open_memory, chat_model):
    mem = open_memory(sessions={"max_turns": 2})
    agent = create_agent(chat_model("Got it."), middleware=[RMMMiddleware(mem)],
                         checkpointer=InMemorySaver())
    run(agent, FACT, user="u1", thread="A")
    assert any("Biscuit" in m.text for m in mem.memories(user_id="u1"))


async def test_async_run_recalls_and_logs(mem, chat_model):
    mem.add_session([{"speaker": "user", "text": FACT}], user_id="u1")
    model = chat_model("Biscuit.")
    agent = create_agent(model, middleware=[RMMMiddleware(mem)], checkpointer=InMemorySaver())
    await agent.ainvoke(user_says(QUESTION), config={"configurable": {"thread_id": "B"}},
                        context={"user_id": "u1"})
    assert "Biscuit" in model.system_prompt()
    assert [t.text for t in mem.turns(user_id="u1", session_id="B")] == [QUESTION, "Biscuit."]


def test_memory_failures_are_logged_and_the_run_goes_on(mem, chat_model, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(mem, "search", broken)
    monkeypatch.setattr(mem, "append", broken)
    agent = create_agent(chat_model("Still here."), middleware=[RMMMiddleware(mem)])
    with caplog.at_level(logging.ERROR, logger="langchain_rmm.middleware"):
        out = run(agent, QUESTION, user="u1", thread="t")
    assert out["messages"][-1].text == "Still here."
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "recall failed" in logged
    assert "could not log" in logged


def test_user_id_from_an_object_context_and_a_custom_key(mem, chat_model):
    class Ctx:
        account = "acct-7"

    agent = create_agent(chat_model("Hi."), middleware=[RMMMiddleware(mem, user_key="account")])
    agent.invoke(user_says("hello"), config={"configurable": {"thread_id": "t"}},
                 context=Ctx())
    assert [t.text for t in mem.turns(user_id="acct-7", session_id="t")] == ["hello", "Hi."]


def test_speakers_name_the_logged_turns(mem, chat_model):
    middleware = RMMMiddleware(mem, speakers={"human": "Ann", "ai": "Sage"})
    agent = create_agent(chat_model("Noted."), middleware=[middleware],
                         checkpointer=InMemorySaver())
    run(agent, FACT, user="u1", thread="A")
    assert [(t.speaker, t.text) for t in mem.turns(user_id="u1", session_id="A")] == [
        ("Ann", FACT), ("Sage", "Noted.")]


@pytest.mark.parametrize("kwargs, match", [
    ({"memory": object()}, "ReflectiveMemory"), ({"k": 0}, "k must"), ({"k": "5"}, "k must"),
    ({"budget": 0}, "budget must"), ({"budget": 1.5}, "budget must"),
    ({"speakers": ["human"]}, "speakers must map"), ({"speakers": {"human": " "}}, "speaker"),
])
def test_bad_arguments_raise_typed_errors(mem, kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        RMMMiddleware(**{"memory": mem, **kwargs})


def test_citation_mode_asks_for_citations_and_trains_the_reranker(mem, chat_model):
    model = chat_model("Noted.", "Biscuit [1].")
    agent = create_agent(model, middleware=[RMMMiddleware(mem, citations=True)],
                         checkpointer=InMemorySaver())
    run(agent, FACT, user="u1", thread="A")
    mem.end_session(user_id="u1", session_id="A")
    before = len(mem.store.state_log(mem.reranker.state_name("u1"))[1])
    run(agent, QUESTION, user="u1", thread="B")
    assert "[1]" in model.system_prompt()
    assert "[NO_CITE]" in model.system_prompt()
    after = len(mem.store.state_log(mem.reranker.state_name("u1"))[1])
    assert after == before + 1  # one REINFORCE step, from the answer's [1]


def test_a_fact_from_the_last_turn_of_another_thread_is_recalled_without_end_session(
        mem, chat_model):
    model = chat_model("Noted.", "Biscuit.", "I don't know.")
    agent = create_agent(model, middleware=[RMMMiddleware(mem)], checkpointer=InMemorySaver())
    run(agent, FACT, user="u1", thread="A")
    run(agent, QUESTION, user="u1", thread="B")
    assert "Biscuit" in model.system_prompt()
    assert mem.memories(user_id="u1") == []  # nothing reflected: the open session was searched
    run(agent, QUESTION, user="u2", thread="C")
    assert "Biscuit" not in model.system_prompt()


def test_a_threads_own_waiting_turns_are_not_recalled_into_it(mem, chat_model):
    model = chat_model(*["Noted."] * 6, "Biscuit.", "Biscuit.")
    agent = create_agent(model, middleware=[RMMMiddleware(mem)], checkpointer=InMemorySaver())
    for n in range(5):
        run(agent, f"Note {n}: I drink green tea.", user="u1", thread="A")
    run(agent, FACT, user="u1", thread="A")
    run(agent, QUESTION, user="u1", thread="A")
    assert "Biscuit" not in model.system_prompt()  # already in the thread's own messages
    run(agent, QUESTION, user="u1", thread="B")
    assert "Biscuit" in model.system_prompt()


PETS = [f"My {kind} is called {name} and she likes {food}." for kind, name, food in [
    ("dog", "Biscuit", "carrots"), ("cat", "Miso", "tuna"), ("rabbit", "Clover", "kale"),
    ("parrot", "Kiwi", "seeds"), ("hamster", "Pip", "oats"), ("goldfish", "Bubbles", "flakes"),
    ("tortoise", "Sheldon", "lettuce"), ("ferret", "Zip", "eggs")]]


def recalled(prompt: str) -> list[str]:
    """The memory texts of a recall block, in order (lines `[n] text`)."""
    return [line.split("] ", 1)[1] for line in prompt.splitlines()
            if line.startswith("[") and "] " in line]


@pytest.mark.parametrize("budget", [30, 60])
def test_the_word_budget_reaches_the_prompt(mem, chat_model, budget):
    for n, fact in enumerate(PETS):
        mem.add(fact, user_id="u1", occurred_at=f"2024-01-{n + 1:02d}")
    expected = mem.search("What are my pets called?", user_id="u1", max_words=budget)
    every = mem.search("What are my pets called?", user_id="u1", k=len(PETS))
    model = chat_model("Biscuit.")
    run(create_agent(model, middleware=[RMMMiddleware(mem, budget=budget)]),
        "What are my pets called?", user="u1")
    texts = recalled(model.system_prompt())
    assert texts == [h.text for h in expected]
    assert sum(len(t.split()) for t in texts) <= budget
    assert len(texts) < len(every.hits)  # the budget, not the number of memories, cut it
    assert sum(len(t.split()) for t in [*texts, every[len(texts)].text]) > budget


def test_by_default_recall_fills_a_budget_rather_than_five_hits(mem, chat_model):
    for n, fact in enumerate(PETS):
        mem.add(fact, user_id="u1", occurred_at=f"2024-01-{n + 1:02d}")
    model = chat_model("Biscuit.")
    run(create_agent(model, middleware=[RMMMiddleware(mem)]), "What are my pets called?",
        user="u1")
    assert len(recalled(model.system_prompt())) == len(PETS) > 5
