"""`rmm bench ui` end to end on a small bank: every page and search path with its figures."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the ui extra is not installed (pip install -e '.[ui]')")

from rmm_core.cli import main  # noqa: E402

ROWS = ("memories, first page", "memories, page 100", "memories, text filter", "one memory",
        "query breakdown page (search explained)", "search in process",
        "search in process, explain=True")


def test_bench_ui_prints_every_page(capsys):
    assert main(["bench", "ui", "--memories", "300", "--repeats", "3", "--queries", "4"]) == 0
    out = capsys.readouterr().out
    assert "rmm ui on 300 memories of one user" in out
    found = dict(re.findall(r"^(.+?) +([\d.]+) +[\d.]+$", out, re.M))
    assert set(found) == set(ROWS)
    assert all(float(ms) > 0 for ms in found.values())
