"""`RMMChatMemory` in LlamaIndex chat engines.

These tests use LlamaIndex's `MockLLM`: with no `max_tokens` it answers with its own prompt
(so the answer shows exactly what the model was given); with `max_tokens=n` it answers
"text" n times (so session-1 answers do not repeat the user's facts).
"""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    ContextChatEngine,
    SimpleChatEngine,
)
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, TextNode

from llamaindex_rmm import RMMChatMemory
from rmm_core import ReflectiveMemory
from rmm_core.errors import InvalidInputError
from rmm_core.read.context import MEMORY_HEADER

FACT = "My sister Alma breeds greyhounds on a farm near Lisbon."
OTHER_FACT = "I repair vintage motorbikes in my garage every weekend."


class OneDocument(BaseRetriever):
    """A retriever that always returns one unrelated document."""

    def _retrieve(self, query_bundle):
        return [NodeWithScore(node=TextNode(text="The office opens at nine."), score=1.0)]


ENGINES = {
    "simple": lambda llm, memory: SimpleChatEngine.from_defaults(llm=llm, memory=memory),
    "context": lambda llm, memory: ContextChatEngine.from_defaults(
        retriever=OneDocument(), llm=llm, memory=memory),
    "condense_plus_context": lambda llm, memory: CondensePlusContextChatEngine.from_defaults(
        retriever=OneDocument(), llm=llm, memory=memory),
}


def tell(mem, user_id: str, session_id: str, *messages: str) -> None:
    """A finished session-1 chat (answers are filler), then reflection."""
    memory = RMMChatMemory.from_defaults(memory=mem, user_id=user_id, session_id=session_id)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=2), memory=memory)
    for message in messages:
        engine.chat(message)
    assert memory.end_session(), "the session should reflect into at least one memory"


@pytest.fixture(scope="module")
def mem(tmp_path_factory, embedder):
    """One store for the module (reflection is the slow part); each test uses its own ids."""
    mem = ReflectiveMemory.open(str(tmp_path_factory.mktemp("li") / "m.sqlite"),
                                embedder=embedder)
    tell(mem, "u1", "u1-s1", "Hi there!", FACT)
    tell(mem, "u2", "u2-s1", "Hello.", OTHER_FACT)
    yield mem
    mem.close()


@pytest.mark.parametrize("engine_name", sorted(ENGINES))
async def test_session_1_fact_reaches_session_2_prompt_of_that_user_only(mem, engine_name):
    make = ENGINES[engine_name]
    question = "What kind of dogs does my sister breed?"
    mine = make(MockLLM(), RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="s2"))
    theirs = make(MockLLM(), RMMChatMemory.from_defaults(memory=mem, user_id="u2", session_id="s2"))

    sync_prompt = mine.chat(question).response
    async_prompt = (await mine.achat(question)).response
    other_prompt = (await theirs.achat(question)).response

    for prompt in (sync_prompt, async_prompt):
        assert MEMORY_HEADER in prompt
        assert "greyhounds" in prompt
    assert MEMORY_HEADER in other_prompt
    assert "motorbikes" in other_prompt
    assert "greyhounds" not in other_prompt


def test_every_text_message_is_logged_in_order(mem):
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u3", session_id="s1")
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=1), memory=memory)
    engine.chat("first question")
    engine.chat("second question")
    logged = [(t.speaker, t.text) for t in mem.turns(user_id="u3", session_id="s1")]
    assert logged == [("user", "first question"), ("assistant", "text"),
                      ("user", "second question"), ("assistant", "text")]


async def test_async_put_and_get(mem):
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="async")
    await memory.aput(ChatMessage(role="user", content="Tell me about my sister's dogs"))
    got = await memory.aget()
    assert got[0].role == MessageRole.SYSTEM
    assert "greyhounds" in got[0].content
    assert got[-1].content == "Tell me about my sister's dogs"
    assert [t.text for t in await mem.aturns(user_id="u1", session_id="async")] == \
        ["Tell me about my sister's dogs"]


def test_get_recalls_for_explicit_input_and_nothing_without_a_query(mem):
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="s3")
    assert memory.get() == []  # empty window, no input: nothing to recall for
    assert "greyhounds" in memory.get(input="greyhound farm")[0].content


def test_stateless_chat_history_is_not_logged_twice(mem):
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u3", session_id="s2")
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=1), memory=memory)
    engine.chat("one")
    history = memory.get_all()
    engine.chat("two", chat_history=history)  # the caller hands the same history back
    assert [t.text for t in mem.turns(user_id="u3", session_id="s2")] == \
        ["one", "text", "two", "text"]


def test_tool_and_system_messages_stay_in_the_window_but_not_in_the_log(mem):
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u3", session_id="s4")
    messages = [
        ChatMessage(role="system", content="be brief"),
        ChatMessage(role="user", content="weather?"),
        ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_name="weather",
                                                            tool_kwargs={})]),
        ChatMessage(role="tool", content="sunny", additional_kwargs={"tool_call_id": "x"}),
        ChatMessage(role="assistant", content="It is sunny."),
    ]
    memory.put_messages(messages)
    assert memory.get_all() == messages
    assert [(t.speaker, t.text) for t in mem.turns(user_id="u3", session_id="s4")] == \
        [("user", "weather?"), ("assistant", "It is sunny.")]


def test_history_and_memories_stay_within_the_token_limit(mem):
    # a user of its own: u1's other threads, still open, are recalled too (immediate recall)
    tell(mem, "u5", "u5-s1", "Hi there!", FACT)
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u5", session_id="s5",
                                     token_limit=400)
    for i in range(60):
        memory.put(ChatMessage(role="user", content=f"note {i} about my sister and her dogs"))
    got = memory.get()
    used = sum(len(memory.tokenizer_fn(m.content)) for m in got)
    assert used <= 400
    assert got[0].role == MessageRole.SYSTEM
    assert "greyhounds" in got[0].content
    assert got[-1].content == "note 59 about my sister and her dogs"
    assert len(got) < 61  # old history was dropped, not the latest message


def test_recalled_memories_fill_their_share_of_the_token_limit(mem):
    """The memory budget (memory_token_ratio x token_limit tokens) reaches the prompt: the
    best hits in rank order while they fit, not a fixed five."""
    for n in range(12):
        mem.add(f"My cousin number {n} keeps {n + 2} greyhounds in a barn.", user_id="u7")
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u7", session_id="s7",
                                         token_limit=400, memory_token_ratio=0.5)
    got = memory.get("How many greyhounds do my cousins keep?")
    recalled = got[0].content
    assert got[0].role == MessageRole.SYSTEM
    assert len(memory.tokenizer_fn(recalled)) <= 200
    kept = [h for h in mem.search("How many greyhounds do my cousins keep?", user_id="u7",
                                  k=12) if h.text in recalled]
    assert len(kept) > 5
    every = mem.search("How many greyhounds do my cousins keep?", user_id="u7", k=12)
    assert [h.memory.id for h in kept] == [h.memory.id for h in every][:len(kept)]


def test_reset_reflects_the_session_and_starts_a_new_one(mem):
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u4", session_id="first")
    SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=1), memory=memory).chat(
        "I just adopted a parrot called Kiwi.")
    assert mem.memories(user_id="u4") == []
    memory.reset()
    assert memory.get_all() == []
    assert memory.session_id != "first"
    assert any("Kiwi" in m.text for m in mem.memories(user_id="u4"))
    memory.reset()  # nothing new: a no-op, not an error


@pytest.mark.parametrize("kwargs, match", [
    ({"memory": object(), "user_id": "u1"}, "ReflectiveMemory"),
    ({"user_id": ""}, "user_id"),
    ({"user_id": "u1", "token_limit": 0}, "token_limit"),
    ({"user_id": "u1", "chat_store": None}, "unexpected"),
    ({"user_id": "u1", "session_id": ""}, "session_id"),
    ({"user_id": "u1", "speakers": {"human": "Ann"}}, "role 'human'"),
    ({"user_id": "u1", "speakers": {"user": ""}}, "speaker of 'user'"),
])
def test_bad_arguments_are_typed_errors(mem, kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        RMMChatMemory.from_defaults(**{"memory": mem, **kwargs})


def test_speakers_name_the_logged_turns(mem):
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u5", session_id="named",
                                     speakers={"user": "Ann", "assistant": "Sage"})
    memory.put_messages([ChatMessage(role="user", content="I moved to Porto."),
                         ChatMessage(role="assistant", content="Noted, Porto."),
                         ChatMessage(role="system", content="instructions")])
    assert [(t.speaker, t.text) for t in mem.turns(user_id="u5", session_id="named")] == [
        ("Ann", "I moved to Porto."), ("Sage", "Noted, Porto.")]
    direct = RMMChatMemory(memory=mem, user_id="u5", window=memory.window,
                       speakers={"user": "Ann"})  # roles left out are not logged
    direct.put_messages([ChatMessage(role="user", content="Hi."),
                         ChatMessage(role="assistant", content="Hello.")])
    assert [t.speaker for t in mem.turns(user_id="u5", session_id="named")][2:] == ["Ann"]


def test_rejected_message_changes_nothing(mem):
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u3", session_id="s6")
    memory.put(ChatMessage(role="user", content="kept"))
    with pytest.raises(InvalidInputError):
        memory.put(ChatMessage(role="user", content="x" * 4_000_001))
    assert [m.content for m in memory.get_all()] == ["kept"]
    assert [t.text for t in mem.turns(user_id="u3", session_id="s6")] == ["kept"]
