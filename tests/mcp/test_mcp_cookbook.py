"""`cookbook/mcp_client.py --http`: the cookbook's MCP client over streamable HTTP, run as
shipped (its stdio run is checked with the other scripts in tests/test_cookbook.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_helpers import ENV  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "cookbook" / "mcp_client.py"


def test_mcp_client_over_http(tmp_path):
    """It starts `rmm mcp --http` with a token bound to maya, adds a fact and a conversation,
    finds each with the next search (best first), is refused another user, and stops the
    server; neither side logs an error (mcp 1 logged each ended session as one)."""
    done = subprocess.run([sys.executable, str(SCRIPT), "--http"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env=ENV)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "tools: add, search, get, update, delete, history, profile\n" in out
    assert re.search(r"from turns mcp-[\w-]+:1, mcp-[\w-]+:2, mcp-[\w-]+:3", out)
    cat = out.split("Q: What is my cat afraid of?")[1].split("Q: ")[0].strip().splitlines()
    race = out.split("Q: Which race am I training for?")[1].split("another user")[0]
    assert "vacuum cleaner" in cat[0]
    assert "half marathon" in race.strip().splitlines()[0]
    assert "AccessDenied: this token may not act for user 'someone'" in out
    assert re.search(r"rmm mcp: serving on http://127\.0\.0\.1:\d+/mcp", done.stderr)
    assert "Traceback" not in done.stderr
    assert "ERROR" not in done.stderr
