"""`RMMChatMemory` as a `FunctionAgent`'s memory, with LlamaIndex's scripted
`MockFunctionCallingLLMWithChatMemoryOfLastCall` (it calls every tool once, then answers
"Tool calls complete.", and keeps the messages of its last call)."""

from __future__ import annotations

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
from llama_index.core.tools import FunctionTool

from llamaindex_rmm import RMMChatMemory
from rmm_core import ReflectiveMemory
from rmm_core.models.embed import HashEmbedder


def weather(city: str = "Porto") -> str:
    """Today's weather in a city."""
    return f"Sunny in {city}."


async def test_function_agent_run_with_reflective_memory():
    mem = ReflectiveMemory.open(":memory:", embedder=HashEmbedder())
    mem.add_session([{"speaker": "user", "text": "My favourite city is Porto."}],
                    user_id="u1", session_id="earlier")
    memory = RMMChatMemory.from_defaults(memory=mem, user_id="u1", session_id="now")
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(weather)], llm=llm)

    result = await agent.run("What is the weather in my favourite city?", memory=memory)

    assert str(result) == "Tool calls complete."
    seen = llm.last_chat_messages
    assert seen[0].role == MessageRole.SYSTEM
    assert "favourite city is Porto" in seen[0].content
    assert any(m.role == MessageRole.TOOL and m.content == "Sunny in Porto." for m in seen)
    # the window keeps the tool exchange; the log keeps the conversation
    assert [m.role for m in memory.get_all()] == [
        MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL, MessageRole.ASSISTANT]
    assert [(t.speaker, t.text) for t in mem.turns(user_id="u1", session_id="now")] == [
        ("user", "What is the weather in my favourite city?"),
        ("assistant", "Tool calls complete."),
    ]
