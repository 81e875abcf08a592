"""`RMMMemoryBlock` inside LlamaIndex's `Memory` (no LLM involved)."""

from __future__ import annotations

import logging

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import Memory

from llamaindex_rmm import RMMMemoryBlock
from rmm_core import ReflectiveMemory
from rmm_core.errors import InvalidInputError
from rmm_core.models.embed import HashEmbedder


@pytest.fixture
def mem():
    mem = ReflectiveMemory.open(":memory:", embedder=HashEmbedder())
    mem.add_session([{"speaker": "user", "text": "My favourite city is Lisbon."}],
                    user_id="u1", session_id="old")
    mem.add_session([{"speaker": "user", "text": "My favourite city is Oslo."}],
                    user_id="u2", session_id="old")
    return mem


def chat(memory: Memory, n: int) -> None:
    for i in range(n):
        memory.put(ChatMessage(role="user", content=f"question {i} about my favourite city"))
        memory.put(ChatMessage(role="assistant", content=f"answer {i}"))


def test_block_recalls_for_the_latest_user_message_of_its_user(mem):
    block = RMMMemoryBlock(memory=mem, user_id="u1", k=3)
    memory = Memory.from_defaults(session_id="chat", memory_blocks=[block])
    chat(memory, 1)
    system = memory.get()[0]
    assert system.role == MessageRole.SYSTEM
    assert "<reflective_memory>" in system.content
    assert "Lisbon" in system.content
    assert "Oslo" not in system.content


def test_block_records_only_what_the_queue_flushes(mem):
    block = RMMMemoryBlock(memory=mem, user_id="u1")
    memory = Memory.from_defaults(session_id="chat", token_limit=60, token_flush_size=20,
                                  chat_history_token_ratio=0.5, memory_blocks=[block])
    chat(memory, 6)
    logged = [t.text for t in mem.turns(user_id="u1", session_id="chat")]
    queued = [m.content for m in memory.get() if m.role != MessageRole.SYSTEM]
    assert logged
    assert queued
    assert logged == [f"{kind} {i}" if kind == "answer" else
                      f"question {i} about my favourite city"
                      for i in range(len(logged) // 2) for kind in ("question", "answer")]
    assert not set(logged) & set(queued)  # queued messages are not recorded (documented)
    assert block.end_session()  # the flushed turns reflect into memories
    assert any("question 0" in m.text for m in mem.memories(user_id="u1"))


async def test_block_async_get(mem):
    block = RMMMemoryBlock(memory=mem, user_id="u2")
    memory = Memory.from_defaults(session_id="chat", memory_blocks=[block])
    await memory.aput(ChatMessage(role="user", content="which city do I like?"))
    assert "Oslo" in (await memory.aget())[0].content


def test_block_speakers_name_the_flushed_turns(mem):
    block = RMMMemoryBlock(memory=mem, user_id="u1", speakers={"user": "Ann"})
    memory = Memory.from_defaults(session_id="chat", token_limit=60, token_flush_size=20,
                                  chat_history_token_ratio=0.5, memory_blocks=[block])
    chat(memory, 6)
    logged = mem.turns(user_id="u1", session_id="chat")
    assert logged
    assert {t.speaker for t in logged} == {"Ann"}  # the assistant's role is left out
    assert all(t.text.startswith("question") for t in logged)


@pytest.mark.parametrize("kwargs, match", [
    ({"memory": "nope"}, "ReflectiveMemory"), ({"user_id": ""}, "user_id"),
    ({"session_id": ""}, "session_id"), ({"k": 0}, "k must"),
    ({"max_words": 0}, "max_words must"),
    ({"speakers": {"ai": "Sage"}}, "role 'ai'"),
])
def test_bad_block_arguments_are_typed_errors(mem, kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        RMMMemoryBlock(**{"memory": mem, "user_id": "u1", **kwargs})


def test_block_follows_the_error_policy(mem, monkeypatch, caplog):
    async def broken(*args, **kwargs):
        raise OSError("disk on fire")  # LlamaIndex's sync wrapper rewrites RuntimeErrors

    monkeypatch.setattr(mem, "asearch", broken)
    memory = Memory.from_defaults(session_id="chat",
                                  memory_blocks=[RMMMemoryBlock(memory=mem, user_id="u1")])
    chat(memory, 1)
    with caplog.at_level(logging.ERROR, logger="llamaindex_rmm.block"):
        assert [m.role for m in memory.get()] == [MessageRole.USER, MessageRole.ASSISTANT]
    assert "recall failed" in caplog.text
    strict = Memory.from_defaults(session_id="chat2", memory_blocks=[
        RMMMemoryBlock(memory=mem, user_id="u1", strict=True)])
    chat(strict, 1)
    with pytest.raises(OSError, match="disk on fire"):
        strict.get()


def test_block_text_fills_its_word_budget_in_rank_order(mem):
    for n in range(12):
        mem.add(f"My favourite dish number {n} is a stew from city {n}.", user_id="u1")
    question = "question 0 about my favourite city"
    expected = mem.search(question, user_id="u1", max_words=40)
    block = RMMMemoryBlock(memory=mem, user_id="u1", max_words=40)
    memory = Memory.from_defaults(session_id="chat", memory_blocks=[block])
    chat(memory, 1)
    system = memory.get()[0].content
    assert 1 < len(expected) < len(mem.search(question, user_id="u1", k=13))
    assert [h.text in system for h in expected] == [True] * len(expected)
    shown = [h for h in mem.search(question, user_id="u1", k=13) if h.text in system]
    assert [h.memory.id for h in shown] == [h.memory.id for h in expected]
