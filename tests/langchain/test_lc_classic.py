"""`RMMMemory` in a legacy `ConversationChain` (its chat model is the recording fake) and
on its own, with a real memory and embedder."""

from __future__ import annotations

import pytest
from langchain_classic.chains import ConversationChain
from langchain_core.messages import HumanMessage, SystemMessage

from langchain_rmm import RMMMemory
from rmm_core.errors import InvalidInputError

FACT = "My dog is a beagle called Biscuit."


def test_conversation_chain_recalls_memories_and_logs_each_exchange(mem, chat_model):
    mem.add_session([{"speaker": "user", "text": FACT}], user_id="u1")
    model = chat_model("Hello!", "Biscuit, your beagle.")
    chain = ConversationChain(llm=model, memory=RMMMemory(memory=mem, user_id="u1"))
    chain.invoke({"input": "Hi there, I am back."})
    answer = chain.invoke({"input": "What is my dog called?"})
    assert answer["response"] == "Biscuit, your beagle."

    prompt = model.seen[-1][0].text
    assert "[1]" in prompt
    assert "Biscuit" in prompt
    assert "Human: Hi there, I am back.\nAI: Hello!" in prompt
    session = chain.memory.session_id
    assert [(t.speaker, t.text) for t in mem.turns(user_id="u1", session_id=session)] == [
        ("user", "Hi there, I am back."), ("assistant", "Hello!"),
        ("user", "What is my dog called?"), ("assistant", "Biscuit, your beagle.")]


def test_clear_reflects_the_session_and_starts_a_new_one(mem):
    memory = RMMMemory(memory=mem, user_id="u1")
    memory.save_context({"input": "I moved to Porto in March."}, {"response": "Nice city!"})
    first = memory.session_id
    memory.clear()
    assert memory.session_id != first
    assert any("Porto" in m.text for m in mem.memories(user_id="u1"))
    variables = memory.load_memory_variables({"input": "Where do I live?"})
    assert "Porto" in variables["history"]
    assert "Human:" not in variables["history"]
    assert memory.end_session() == []  # nothing logged to the new session yet


def test_messages_mode_and_history_window(mem):
    mem.add_session([{"speaker": "user", "text": FACT}], user_id="u1")
    memory = RMMMemory(memory=mem, user_id="u1", return_messages=True, history_turns=2,
                       memory_key="chat_history", input_key="question")
    for n in range(3):
        memory.save_context({"question": f"question {n}"}, {"answer": f"answer {n}"})
    messages = memory.load_memory_variables({"question": "my dog?"})["chat_history"]
    assert isinstance(messages[0], SystemMessage)
    assert "Biscuit" in messages[0].text
    assert [m.text for m in messages[1:]] == ["question 2", "answer 2"]
    assert isinstance(messages[1], HumanMessage)


def test_speakers_name_the_logged_turns_and_read_back_as_messages(mem):
    memory = RMMMemory(memory=mem, user_id="u2", return_messages=True,
                       speakers={"human": "Ann", "ai": "Sage"})
    memory.save_context({"input": "I moved to Porto."}, {"response": "Nice city!"})
    assert [(t.speaker, t.text) for t in mem.turns(user_id="u2")] == [
        ("Ann", "I moved to Porto."), ("Sage", "Nice city!")]
    recent = memory.load_memory_variables({"input": "hello"})["history"][-2:]
    assert [type(m).__name__ for m in recent] == ["HumanMessage", "AIMessage"]
    with pytest.raises(InvalidInputError, match="speaker of 'ai'"):
        RMMMemory(memory=mem, user_id="u2", speakers={"ai": ""})


def test_ambiguous_outputs_need_an_output_key(mem):
    memory = RMMMemory(memory=mem, user_id="u1")
    with pytest.raises(InvalidInputError, match="output_key"):
        memory.save_context({"input": "hi"}, {"a": "1", "b": "2"})
    assert mem.store.users() == []


@pytest.mark.parametrize("kwargs", [{"memory": "nope"}, {"user_id": None}, {"k": 0},
                                    {"history_turns": -1}, {"session_id": ""}])
def test_bad_arguments_raise_typed_errors(mem, kwargs):
    with pytest.raises(InvalidInputError):
        RMMMemory(**{"memory": mem, "user_id": "u1", **kwargs})
