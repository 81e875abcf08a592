"""The LangChain cookbook runs offline as shipped (its chat model is its own offline stand-in)
and shows the agent remembering across threads, for the right user only."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

COOKBOOK = Path(__file__).resolve().parents[2] / "cookbook" / "langchain_agent.py"


def test_cookbook_agent_remembers_across_threads(tmp_path, monkeypatch, capsys, embedder):
    monkeypatch.setattr(sys, "argv", [str(COOKBOOK), "--db", str(tmp_path / "agent.sqlite")])
    runpy.run_path(str(COOKBOOK), run_name="__main__")
    out = capsys.readouterr().out
    friday = out.split("thread 'friday'")[1].split("thread 'other'")[0]
    other = out.split("thread 'other'")[1].split("RMMRetriever")[0]
    assert "agent> From what you told me before:" in friday
    assert "Biscuit" in friday
    assert "Biscuit" not in other.split("agent>")[1]
    assert "night shifts" in out.split("RMMRetriever")[1]
