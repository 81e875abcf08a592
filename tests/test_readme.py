"""The README's promises: it stays a front door (at most 1,500 words), and its ten-line
example runs, twice in a row against the same file, as a user would run it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
MAX_WORDS = 1500


def test_readme_is_at_most_1500_words():
    words = len(README.split())
    assert words <= MAX_WORDS, (
        f"README.md has {words} words (at most {MAX_WORDS}): move details to docs/, history "
        "to CHANGELOG.md, contributors' notes to CONTRIBUTING.md")


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
    assert first
    assert first == second
    score, refs = re.match(r"([\d.]+) (\[.*?\])", first[0]).groups()
    assert 0.0 < float(score) <= 1.0
    assert refs == "['D1:3', 'D1:4']"
