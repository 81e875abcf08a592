"""`RMMChatMemory`'s window on LlamaIndex's SQL-backed `Memory`, turn timestamps, and the error
policy, through real chat engines (LlamaIndex's scripted `MockLLM`) with a real SQLite memory
and the packaged embedder."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone

import pytest
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM

from llamaindex_rmm import RMMChatMemory
from rmm_core import ReflectiveMemory
from rmm_core.errors import InvalidInputError

FACT = "My sister Alma breeds greyhounds on a farm near Lisbon."


def test_window_is_there_again_in_a_new_process(tmp_path, embedder):
    store, chat_db = tmp_path / "m.sqlite", tmp_path / "chat.sqlite"
    uri = f"sqlite+aiosqlite:///{chat_db}"
    first = textwrap.dedent(f"""
        from llama_index.core.chat_engine import SimpleChatEngine
        from llama_index.core.llms import MockLLM
        from llamaindex_rmm import RMMChatMemory
        from rmm_core import ReflectiveMemory
        from rmm_core.models.embed import default_embedder
        with ReflectiveMemory.open({str(store)!r}, embedder=default_embedder()) as mem:
            memory = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="chat-1",
                                             async_database_uri={uri!r})
            SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=2), memory=memory).chat(
                {FACT!r})
    """)
    subprocess.run([sys.executable, "-c", first], check=True, timeout=300)

    with ReflectiveMemory.open(str(store), embedder=embedder) as mem:
        memory = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="chat-1",
                                         async_database_uri=uri)
        assert [(m.role.value, m.content) for m in memory.get_all()] == [
            ("user", FACT), ("assistant", "text text")]
        prompt = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory).chat(
            "And where is the farm?").response
        assert FACT in prompt  # the restored window reaches the model
        other = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="chat-2",
                                        async_database_uri=uri)
        assert other.get_all() == []


def test_logged_turns_carry_the_time_they_were_said(open_memory):
    mem = open_memory()
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="s")
    before = datetime.now(timezone.utc)
    SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=1), memory=memory).chat(FACT)
    turns = mem.turns(user_id="u1", session_id="s")
    assert len(turns) == 2
    for turn in turns:
        assert turn.timestamp is not None
        assert before - timedelta(seconds=1) <= turn.timestamp <= datetime.now(timezone.utc)
    memory.end_session()
    assert all(m.occurred_at is not None for m in mem.memories(user_id="u1"))


def test_engine_reset_ends_the_chat_session(open_memory):
    mem = open_memory()
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="first")
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=1), memory=memory)
    engine.chat(FACT)
    engine.reset()
    assert memory.session_id != "first"
    assert memory.get_all() == []
    assert any("greyhounds" in m.text for m in mem.memories(user_id="u1"))


def broken(*args, **kwargs):
    raise RuntimeError("disk on fire")


def test_a_failing_memory_call_is_logged_and_the_chat_goes_on(open_memory, monkeypatch,
                                                              caplog):
    mem = open_memory()
    for name in ("asearch", "aappend"):
        monkeypatch.setattr(mem, name, broken)
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="s")
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=1), memory=memory)
    with caplog.at_level(logging.ERROR, logger="llamaindex_rmm.memory"):
        assert engine.chat("hello").response == "text"
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "recall failed" in logged
    assert "could not log" in logged
    assert [m.content for m in memory.get_all()] == ["hello", "text"]


async def test_strict_raises_a_failing_memory_call(open_memory, monkeypatch):
    mem = open_memory()
    monkeypatch.setattr(mem, "asearch", broken)
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="s", strict=True)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=1), memory=memory)
    with pytest.raises(RuntimeError, match="disk on fire"):
        await engine.achat("hello")


@pytest.mark.parametrize("user_id", [42, "", None])
def test_an_invalid_user_fails_when_the_memory_is_built(open_memory, user_id):
    with pytest.raises(InvalidInputError, match="user_id"):
        RMMChatMemory.from_defaults(memory=open_memory(), user_id=user_id)



def test_a_memory_opened_from_a_path_keeps_its_window_in_that_file(tmp_path):
    path = str(tmp_path / "memory.sqlite")
    memory = RMMChatMemory.from_defaults(memory=path, user_id="u1", session_id="c1")
    SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=1), memory=memory).chat(FACT)
    memory.memory.close()
    again = RMMChatMemory.from_defaults(memory=path, user_id="u1", session_id="c1")
    assert [m.content for m in again.get_all()] == [FACT, "text"]
    assert [t.text for t in again.memory.turns(user_id="u1")] == [FACT, "text"]
    again.memory.close()


def test_a_fact_from_the_last_turn_of_another_chat_is_recalled_without_end_session(
        open_memory):
    mem = open_memory()
    first = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="a")
    SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=1), memory=first).chat(FACT)
    second = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="b")
    prompt = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=second).chat(
        "What does my sister breed?").response
    assert "greyhounds" in prompt.split("What does my sister breed?")[0]
    assert mem.memories(user_id="u1") == []  # nothing reflected: the open session was searched
    other = RMMChatMemory.from_defaults(memory=mem, user_id="u2", session_id="c")
    assert "greyhounds" not in SimpleChatEngine.from_defaults(llm=MockLLM(), memory=other).chat(
        "What does my sister breed?").response


def test_a_chats_own_waiting_turns_are_not_recalled_into_it(open_memory):
    mem = open_memory()
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="a")
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=1), memory=memory)
    for n in range(8):
        engine.chat(f"Note {n}: my sister has dogs.")
    engine.chat(FACT)
    got = memory.get(input="What does my sister breed?")
    assert all(m.role != "system" for m in got)  # the window holds them, recall adds nothing
    assert got[-2].content == FACT
    other = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="b")
    assert "greyhounds" in other.get(input="What does my sister breed?")[0].content


def test_with_a_background_worker_reset_leaves_reflection_to_it(open_memory):
    mem = open_memory(sessions={"background_reflection": True, "reflection_interval": 0.2})
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="first")
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=1), memory=memory)
    engine.chat(FACT)
    engine.reset()
    assert memory.session_id != "first"
    assert memory.get_all() == []
    deadline = time.monotonic() + 30
    while not mem.memories(user_id="u1") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any("greyhounds" in m.text for m in mem.memories(user_id="u1"))
