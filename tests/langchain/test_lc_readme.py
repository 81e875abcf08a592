"""The README's `create_agent` block runs as written and adds at most four lines; its chat
model is langchain_core's scripted fake, the memory a real SQLite file with the packaged
embedder (the block opens it by path)."""

from __future__ import annotations

import re
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from rmm_core import ReflectiveMemory

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def readme_block(marker: str) -> str:
    """The first python block after the sentence that names `marker`."""
    after = README[README.index(marker):]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


def test_create_agent_block_adds_at_most_four_lines_and_runs(tmp_path, monkeypatch, embedder):
    block = readme_block("test_lc_readme.py` runs this")
    added = [line for line in block.splitlines() if re.search(r"#\s*\+", line)]
    assert 1 <= len(added) <= 4, added
    monkeypatch.chdir(tmp_path)
    model = FakeMessagesListChatModel(responses=[AIMessage(content="Noted.")])
    exec(block, {"create_agent": create_agent, "model": model, "tools": []})
    with ReflectiveMemory.open("memory.sqlite", embedder=embedder) as mem:
        assert [(t.speaker, t.text) for t in mem.turns(user_id="u1", session_id="t1")] == [
            ("user", "My dog is a beagle called Biscuit."), ("assistant", "Noted.")]
