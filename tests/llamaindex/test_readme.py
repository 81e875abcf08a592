"""The README's chat-engine block runs as written, adds at most three lines, keeps its window
across a restart and is recalled in a new chat; its LLM is LlamaIndex's scripted `MockLLM`,
the memory a real SQLite file opened by path."""

from __future__ import annotations

import re
from pathlib import Path

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM

from llamaindex_rmm import RMMChatMemory

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def readme_block(marker: str) -> str:
    """The first python block after the sentence that names `marker`."""
    after = README[README.index(marker):]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


def test_chat_engine_block_adds_at_most_three_lines_and_runs(tmp_path, monkeypatch):
    block = readme_block("test_readme.py` runs this")
    added = [line for line in block.splitlines() if re.search(r"#\s*\+", line)]
    assert 1 <= len(added) <= 3, added
    monkeypatch.chdir(tmp_path)
    scope: dict = {"SimpleChatEngine": SimpleChatEngine, "llm": MockLLM(max_tokens=1)}
    exec(block, scope)
    scope["memory"].memory.close()
    again = RMMChatMemory.from_defaults(memory="memory.sqlite", user_id="u1", session_id="chat-1")
    assert [m.content for m in again.get_all()] == [
        "My sister Alma breeds greyhounds near Lisbon.", "text"]
    new_chat = RMMChatMemory.from_defaults(memory=again.memory, user_id="u1", session_id="chat-2")
    prompt = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=new_chat).chat(
        "What does my sister breed?").response  # MockLLM answers with its prompt
    assert "greyhounds" in prompt.split("What does my sister breed?")[0]
    again.memory.close()
