"""Every ```python block of README.md runs as written: each in a fresh interpreter, in an
empty folder, offline. A block that imports a framework is skipped only when that framework
is not installed (CI installs them all), never for any other reason."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
BLOCKS = re.findall(r"^```python\n(.*?)^```", README, re.S | re.M)
FRAMEWORKS = {"langchain": "langchain", "langchain_rmm": "langchain",
              "llama_index": "llama_index.core", "llamaindex_rmm": "llama_index.core"}
"""Top-level module a block imports -> the module whose absence skips it."""


def _needs(block: str) -> list[str]:
    imported = re.findall(r"^\s*(?:from|import)\s+([\w]+)", block, re.M)
    return sorted({FRAMEWORKS[name] for name in imported if name in FRAMEWORKS})


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 3, "README.md should show the core and both frameworks"


@pytest.mark.parametrize("number", range(len(BLOCKS)), ids=lambda n: f"block{n + 1}")
def test_readme_block_runs_as_written(number, tmp_path):
    block = BLOCKS[number]
    for module in _needs(block):
        if importlib.util.find_spec(module.split(".")[0]) is None or \
                importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (pip install -e '.[all]')")
    script = tmp_path / "block.py"
    script.write_text(block)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # no block may need an LLM API
        env.pop(key, None)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env=env)
    assert run.returncode == 0, f"README block {number + 1}:\n{block}\n{run.stderr[-3000:]}"
    assert "Warning" not in run.stderr, run.stderr[-2000:]
