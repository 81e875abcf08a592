"""A LangChain agent that remembers a user across threads, with `RMMMiddleware`.

Runs offline as it is: the chat model is a small stand-in that answers by quoting the first
memory recalled into its system prompt. Swap in any LangChain chat model (for example
`init_chat_model("openai:gpt-4o-mini")`) and nothing else changes.

    python cookbook/langchain_agent.py [--db agent_memory.sqlite]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from langchain_rmm import RMMMiddleware, RMMRetriever  # noqa: E402
from rmm_core import ReflectiveMemory  # noqa: E402


class QuoteFirstMemory(BaseChatModel):
    """Offline stand-in for a real chat model: quotes memory [1] of its system prompt."""

    @property
    def _llm_type(self) -> str:
        return "quote-first-memory"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        system = messages[0].text if messages and messages[0].type == "system" else ""
        recalled = [line[4:] for line in system.splitlines() if line.startswith("[1] ")]
        if recalled:
            answer = f"From what you told me before: {recalled[0]}"
        elif messages[-1].text.rstrip().endswith("?"):
            answer = "I don't know that yet."
        else:
            answer = "Thanks, I'll keep that in mind."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=answer))])


def chat(agent: Any, text: str, *, user_id: str, thread_id: str) -> None:
    """One run of the agent for a user in a thread; prints the exchange."""
    result = agent.invoke({"messages": [{"role": "user", "content": text}]},
                          config={"configurable": {"thread_id": thread_id}},
                          context={"user_id": user_id})
    print(f"  {user_id}> {text}\n  agent> {result['messages'][-1].text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=None, help="SQLite file (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "agent_memory.sqlite")
        with ReflectiveMemory.open(db) as mem:
            agent = create_agent(
                QuoteFirstMemory(),
                system_prompt="You are a friendly assistant.",
                middleware=[RMMMiddleware(mem, k=3)],  # recall before each call, log after
                checkpointer=InMemorySaver(),          # short-term memory of each thread
            )

            print("thread 'monday' (alice):")
            for text in ["I adopted a beagle called Biscuit; he is three years old.",
                         "I work night shifts at the children's hospital."]:
                chat(agent, text, user_id="alice", thread_id="monday")
            # No end_session: what was said in 'monday' is searchable at once. The thread's
            # session is reflected into memories later (idle timeout, size threshold,
            # mem.end_session(user_id="alice", session_id="monday") or a background worker).

            question = "What is the name of my dog?"
            print("\nthread 'friday' (alice, a new thread):")
            chat(agent, question, user_id="alice", thread_id="friday")
            print("\nthread 'other' (bob, who never mentioned a dog):")
            chat(agent, question, user_id="bob", thread_id="other")

            print("\nthe same memories as LangChain documents (RMMRetriever):")
            for doc in RMMRetriever(memory=mem, user_id="alice", k=2).invoke("night shifts"):
                print(f"  {doc.metadata['score']:.3f}  turns {doc.metadata['refs']}  "
                      f"{doc.page_content!r}")


if __name__ == "__main__":
    main()
