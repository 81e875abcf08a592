"""The five MemGPT memory tools: as plain callables, as LangChain tools inside a real
`create_agent` graph, and as LlamaIndex `FunctionTool`s inside a real `FunctionAgent`. The
agents' chat models are scripted fakes (LangChain's `FakeMessagesListChatModel`, LlamaIndex's
`MockFunctionCallingLLM` with a scripted response generator)."""

from __future__ import annotations

from typing import Any

import pytest

from rmm_core import ReflectiveMemory, Turn
from rmm_core.agents.tools import TOOL_DESCRIPTIONS, MemoryTools
from rmm_core.models.embed import HashEmbedder

NAMES = list(TOOL_DESCRIPTIONS)


@pytest.fixture
def mem() -> ReflectiveMemory:
    m = ReflectiveMemory.open(":memory:", embedder=HashEmbedder())
    m.add_session([Turn("user", "I adopted a greyhound called Biscuit in March.", id="a1"),
                   Turn("assistant", "Biscuit is a lovely name!", id="a2")],
                  user_id="u1", session_id="s1")
    yield m
    m.close()


@pytest.fixture
def tools(mem) -> MemoryTools:
    return MemoryTools(mem, user_id="u1", page_size=2)


def test_core_memory_tools(tools):
    assert tools.core_memory_append("human", "Name: Ada").startswith("Appended to human")
    out = tools.core_memory_replace("human", "Name: Ada", "Name: Ada Lovelace")
    assert out.endswith("Name: Ada Lovelace")
    assert tools.working.blocks["human"].value == "Name: Ada Lovelace"


@pytest.mark.parametrize(("name", "args", "message"), [
    ("core_memory_append", ("pet", "x"), "no core block 'pet'"),
    ("core_memory_append", ("human",), "missing a required argument: 'content'"),
    ("core_memory_append", ("human", ""), "content must not be empty"),
    ("core_memory_append", ("human", "x" * 2001), "limit is 2000"),
    ("core_memory_replace", ("human", "absent", "y"), "is not in block"),
    ("core_memory_replace", ("human", "a", None), "new_content must be a string"),
    ("archival_memory_insert", (["a list"],), "content must be a string"),
    ("archival_memory_search", ("dog", -1), "page must be a whole number"),
    ("archival_memory_search", ("dog", True), "page must be a whole number"),
    ("conversation_search", ("  ",), "query must not be empty"),
    ("conversation_search", ("dog", 0, "extra"), "too many positional arguments"),
])
def test_bad_arguments_come_back_as_error_strings(tools, name, args, message):
    out = getattr(tools, name)(*args)
    assert out.startswith("Error: ")
    assert message in out
    assert tools.working.blocks["human"].value == ""


def test_archival_insert_and_search(tools, mem):
    before = len(mem.memories(user_id="u1"))
    out = tools.archival_memory_insert("Ada is allergic to peanuts.")
    assert out.startswith("Archived as memory ")
    new_id = out.removeprefix("Archived as memory ").rstrip(".")
    assert len(mem.memories(user_id="u1")) == before + 1
    note = next(m for m in mem.memories(user_id="u1") if m.id == new_id)
    assert note.refs
    assert note.versions[0].reason == "created"
    found = tools.archival_memory_search("peanuts allergic")
    assert found.splitlines()[1].startswith(f"[0] (memory {new_id})")
    assert "No archival memories" in tools.archival_memory_search("peanuts", page=5)


def test_conversation_search_pages_over_the_log_without_notes(tools, mem):
    tools.archival_memory_insert("Biscuit note from the agent")
    mem.add_session([Turn("user", f"Biscuit ran {i} laps today") for i in range(3)],
                    user_id="u1", session_id="s2")
    first = tools.conversation_search("Biscuit")
    assert first.startswith("Past messages, page 0 (5 matches)")
    assert len(first.splitlines()) == 3
    rest = tools.conversation_search("Biscuit", page=2)
    assert len(rest.splitlines()) == 2
    assert "agent" not in first + rest + tools.conversation_search("Biscuit", page=1)
    assert tools.conversation_search("volcano").startswith("No past messages match")
    assert MemoryTools(mem, user_id="u2").conversation_search("Biscuit").startswith("No past")


# LangChain ---------------------------------------------------------------------------------------
def test_langchain_agent_calls_the_tools(mem):
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage

    from langchain_rmm import memory_tools

    class ToolCallingFake(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
            return self

    calls = [
        {"name": "core_memory_append", "args": {"label": "human", "content": "Name: Ada"},
         "id": "c1"},
        {"name": "archival_memory_insert", "args": {"content": "Ada plays the cello."},
         "id": "c2"},
        {"name": "core_memory_append", "args": {"label": "human", "content": 5}, "id": "c3"},
        {"name": "conversation_search", "args": {"query": "greyhound"}, "id": "c4"},
    ]
    model = ToolCallingFake(responses=[AIMessage(content="", tool_calls=calls),
                                       AIMessage(content="Noted.")])
    lc_tools = memory_tools(mem, user_id="u1")
    assert [t.name for t in lc_tools] == NAMES
    agent = create_agent(model, tools=lc_tools)
    out = agent.invoke({"messages": [{"role": "user", "content": "I'm Ada, I play cello."}]})
    replies = {m.tool_call_id: m.content for m in out["messages"] if m.type == "tool"}
    assert replies["c1"].startswith("Appended to human")
    assert replies["c2"].startswith("Archived as memory")
    assert replies["c3"].startswith("Error: bad arguments")
    assert "content" in replies["c3"]
    assert "Biscuit" in replies["c4"]
    assert out["messages"][-1].content == "Noted."
    assert mem.working_context(user_id="u1").blocks["human"].value == "Name: Ada"
    assert any("cello" in m.text for m in mem.memories(user_id="u1"))


# LlamaIndex --------------------------------------------------------------------------------------
async def test_llamaindex_agent_calls_the_tools(mem):
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    from llamaindex_rmm import memory_tools

    seen: list[str] = []

    def script(messages, **kwargs) -> ChatMessage:
        results = [m for m in messages if m.role == MessageRole.TOOL]
        if results:
            seen.extend(str(m.content) for m in results)
            return ChatMessage(role=MessageRole.ASSISTANT, content="Saved.")
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[
            ToolCallBlock(tool_call_id="t1", tool_name="core_memory_append",
                          tool_kwargs={"label": "persona", "content": "I speak briefly."}),
            ToolCallBlock(tool_call_id="t2", tool_name="core_memory_replace",
                          tool_kwargs={"label": "persona", "old_content": "nothing",
                                       "new_content": "x"}),
            ToolCallBlock(tool_call_id="t3", tool_name="archival_memory_search",
                          tool_kwargs={"query": "greyhound Biscuit"}),
        ])

    li_tools = memory_tools(mem, user_id="u1")
    assert [t.metadata.name for t in li_tools] == NAMES
    agent = FunctionAgent(tools=li_tools, llm=MockFunctionCallingLLM(response_generator=script))
    result = await agent.run("Be brief from now on.")
    assert str(result) == "Saved."
    # FunctionAgent runs one step's tool calls concurrently: their order is not fixed
    assert len(seen) == 3
    assert any(s.startswith("Appended to persona") for s in seen)
    assert any(s.startswith("Error: ") and "is not in block 'persona'" in s for s in seen)
    assert any("Biscuit" in s for s in seen)
    assert mem.working_context(user_id="u1").blocks["persona"].value == "I speak briefly."
