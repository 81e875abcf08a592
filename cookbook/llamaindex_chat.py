"""Reflective memory in LlamaIndex: a chat engine that remembers across sessions.

Runs offline as it is: `MockLLM` echoes its prompt, so you can see what the model would be
given. Swap in any LlamaIndex LLM (OpenAI, Ollama, ...) for real answers.

    python cookbook/llamaindex_chat.py
"""

from __future__ import annotations

import asyncio

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.core.schema import NodeWithScore, TextNode

from llamaindex_rmm import RMMChatMemory, RMMMemoryBlock, RMMReranker
from rmm_core import ReflectiveMemory

mem = ReflectiveMemory.open(":memory:")  # or a file path / database URL to keep it

# 1. Session 1: every message goes to the durable turn log; ending the session reflects it.
memory = RMMChatMemory.from_defaults(memory=mem, user_id="ana", session_id="monday")
chat = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=4), memory=memory)
chat.chat("Hi! I'm training for the Lisbon half marathon in October.")
chat.chat("My knee hurts after long runs, so I swim on Wednesdays.")
memory.end_session()  # or memory.reset(); idle sessions are reflected automatically too

# 2. Session 2, days later: the recalled memories arrive as a system message.
memory = RMMChatMemory.from_defaults(memory=mem, user_id="ana", session_id="friday")
chat = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)
print("--- what the LLM sees in session 2 ---")
print(chat.chat("Can you plan my training for next week?").response)

# 3. The same memory as a block of LlamaIndex's own `Memory` (records only what its
#    short-term queue flushes; RMMChatMemory above captures everything).
block_memory = Memory.from_defaults(
    session_id="sunday", memory_blocks=[RMMMemoryBlock(memory=mem, user_id="ana", k=3)])
print("--- memory block ---")
print(asyncio.run(block_memory.aget(input="Which race am I training for?"))[0].content)

# 4. The learned reranker as a node postprocessor for any retriever or query engine,
#    e.g. `index.as_query_engine(node_postprocessors=[reranker])`.
reranker = RMMReranker(memory=mem, user_id="ana", top_n=2)
nodes = [NodeWithScore(node=TextNode(text=t)) for t in (
    "Swimming eases the load on sore knees.",
    "Half marathon plans usually peak at 18 km long runs.",
    "Sourdough needs a mature starter.")]
print("--- reranked ---")
for node in reranker.postprocess_nodes(nodes, query_str="knee-friendly half marathon training"):
    print(f"{node.score:.3f}  {node.node.get_content()}")
# After your LLM answers, `mem.feedback(result, cited=[...])` trains this reranker.
