"""The README's promises: every `MemoryConfig` option is documented, and its ten-line example
runs, twice in a row against the same file, as a user would run it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from rmm_core import MemoryConfig

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_config_option_is_documented():
    missing = [name for name in MemoryConfig.model_fields if f"`{name}`" not in README]
    assert not missing, f"add these options to the README's configuration table: {missing}"


def test_ten_line_example_runs_twice_on_the_same_file(tmp_path):
    example = re.search(r"## Ten lines\n+```python\n(.*?)```", README, re.S)[1]
    script = tmp_path / "example.py"
    script.write_text(example)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    runs = [subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300, env=env) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    first, second = (run.stdout.splitlines() for run in runs)
    assert first and first == second  # the second run added nothing: the same one hit
    score, refs = re.match(r"([\d.]+) (\[.*?\])", first[0]).groups()
    assert 0.0 < float(score) <= 1.0 and refs == "['D1:3', 'D1:4']"
