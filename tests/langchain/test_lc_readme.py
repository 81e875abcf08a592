"""The README's `create_agent` block runs, adds at most four lines, and the agent recalls in
a new thread what was said in the block; the block's stand-in chat model is swapped for the
recording fake (langchain_core's scripted model, which also records its prompts), the memory
a real SQLite file the block opens by path. `tests/test_readme_blocks.py` runs the block
exactly as written."""

from __future__ import annotations

import re
from pathlib import Path

from langchain.agents import create_agent

from rmm_core import ReflectiveMemory

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def readme_block(marker: str) -> str:
    """The first python block after the sentence that names `marker`."""
    after = README[README.index(marker):]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


def test_create_agent_block_adds_at_most_four_lines_and_runs(tmp_path, monkeypatch, embedder,
                                                             chat_model):
    block = readme_block("test_lc_readme.py` runs this")
    added = [line for line in block.splitlines() if re.search(r"#\s*\+", line)]
    assert 1 <= len(added) <= 4, added
    monkeypatch.chdir(tmp_path)
    model = chat_model("Noted.", "Biscuit.")
    own_model = re.compile(r"^model = .*$", re.M)
    assert own_model.search(block), "the block should define its own stand-in `model`"
    scope: dict = {"create_agent": create_agent, "model": model}
    exec(own_model.sub("", block), scope)
    assert scope["model"] is model
    assert "Biscuit" in model.system_prompt()  # the block's second run, in thread t2
    with ReflectiveMemory.open("memory.sqlite", embedder=embedder) as mem:
        assert [(t.speaker, t.text) for t in mem.turns(user_id="u1", session_id="t1")] == [
            ("user", "My dog is a beagle called Biscuit."), ("assistant", "Noted.")]
