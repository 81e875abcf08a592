"""`rmm bench paired` on the tests' tiny JSON Lines conversations: both sides ingest and
search, and the ratios are printed."""

from __future__ import annotations

import re
from pathlib import Path

from rmm_core.cli import main

TINY = Path(__file__).parents[1] / "data" / "conversations.jsonl"


def test_paired_prints_ingest_and_search_ratios(capsys):
    assert main(["--no-progress", "bench", "paired", "--dataset", "jsonl", "--data", str(TINY),
                 "--set", "supersession=false", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "B: supersession=false; 2 conversations" in out
    for row in ("ingest", "search p50", "search p95"):
        line = next(x for x in out.splitlines() if x.startswith(row))
        ratio = float(re.search(r"B/A ([\d.]+)", line).group(1))
        assert ratio > 0, line


def test_paired_refuses_an_unreadable_dataset(tmp_path, capsys):
    assert main(["bench", "paired", "--dataset", "jsonl", "--data", str(tmp_path / "none"),
                 "--set", "supersession=false"]) != 0
    assert "cannot read" in capsys.readouterr().err
