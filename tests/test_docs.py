"""The API reference builds from the docstrings with no warning (`mkdocs build --strict`)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# each package's reference page, and the page that must show every name of its __all__
PAGES = {"rmm_core": "core", "langchain_rmm": "langchain", "llamaindex_rmm": "llamaindex"}


@pytest.mark.skipif(importlib.util.find_spec("mkdocstrings") is None,
                    reason="the docs extra is not installed (pip install -e '.[docs]')")
def test_api_reference_builds_without_warnings(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "WARNING" not in output, output[-3000:]
    for package, page in PAGES.items():
        html = (tmp_path / "site" / "reference" / page / "index.html").read_text()
        missing = [name for name in importlib.import_module(package).__all__
                   if f'id="{package}.{name}"' not in html and f'.{name}"' not in html]
        assert not missing, f"{package} names missing from reference/{page}.md: {missing}"
    core = (tmp_path / "site" / "reference" / "core" / "index.html").read_text()
    assert "add_session" in core and "MemoryConfig" in core
