"""`rmm bench mcp` end to end on a small bank: three paths, each with its figures."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from rmm_core.cli import main  # noqa: E402


def test_bench_mcp_prints_each_path_against_in_process(capsys):
    assert main(["bench", "mcp", "--memories", "300", "--queries", "8", "--warmup", "2"]) == 0
    out = capsys.readouterr().out
    assert "search through MCP on 300 memories, k=5, 8 queries a path" in out
    rows = {m[0]: [float(x) for x in m[1:]] for m in re.findall(
        r"^(in-process search|search tool, no transport|MCP over stdio|MCP over HTTP)"
        r" +([\d.]+) +([\d.]+) +(-?[\d.]+) ms +([\d.]+)x$", out, re.M)}
    assert set(rows) == {"in-process search", "search tool, no transport", "MCP over stdio",
                         "MCP over HTTP"}
    assert rows["in-process search"][2:] == [0.0, 1.0]
    base = rows["in-process search"][0]
    for p50, p95, overhead, ratio in rows.values():
        assert 0 < p50 <= p95
        assert overhead == pytest.approx(p50 - base, abs=0.011)
        assert ratio == pytest.approx(p50 / base, abs=0.01)
