"""Every cookbook script runs offline as shipped (a real subprocess, the real embedder) and
prints what it promises. The LangChain one has its own test in tests/langchain."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COOKBOOK = Path(__file__).resolve().parents[1] / "cookbook"

EXPECTED = {
    "quickstart.py": ["memories in", "Q: ", "from turns "],
    "llamaindex_chat.py": [],
    "scm_controller.py": [],
    "memgpt_working_context.py": [],
    "amem_notes.py": [],
    "agent_workflow_memory.py": [],
}


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_cookbook_script_runs_offline(script, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    args = [sys.executable, str(COOKBOOK / script)]
    if script == "quickstart.py":
        args += ["--db", str(tmp_path / "q.sqlite"), "--questions", "2"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
    for marker in EXPECTED[script]:
        assert marker in done.stdout


def test_quickstart_falls_back_to_the_built_in_conversation(tmp_path):
    done = subprocess.run(
        [sys.executable, str(COOKBOOK / "quickstart.py"), "--data", str(tmp_path / "none.json"),
         "--db", str(tmp_path / "q.sqlite")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "built-in conversation" in done.stdout
    dog = done.stdout.split("Q: What kind of dog did Ana adopt?")[1].split("Q: ")[0]
    assert "beagle" in dog and "S1:1" in dog
