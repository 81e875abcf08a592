"""Every cookbook notebook runs offline top to bottom on a fresh kernel of this Python
(nbclient), shows what it says it shows, and is committed with the outputs of such a run
(`python scripts/run_notebooks.py` stores them), plots included."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

COOKBOOK = Path(__file__).resolve().parents[1] / "cookbook"
NOTEBOOKS = sorted(p.name for p in COOKBOOK.glob("*.ipynb"))
LOCOMO = Path(os.environ.get("RMM_LOCOMO", COOKBOOK.parents[1] / "shared/data/locomo/"
                                                                 "locomo10_dev.json"))
EXPECTED = {
    "quickstart.ipynb": ["memories", "from turns"],
    "langchain_agent.ipynb": ["agent> From what you told me before", "Biscuit",
                              "bob> What is the name of my dog?\n  agent> I don't know"],
    "llamaindex_chat.ipynb": ["Long-term memory about this user", "Lisbon half marathon"],
    "locomo_benchmark.ipynb": ["rmm", "session/bm25", "feedback steps"],
    "inspect_memories.ipynb": ["v1 created", "v2 merged", "(june)"],
    "postgres.ipynb": ["postgresql://", "adopted a cat", "memories,"],
}
"""Text each notebook's outputs must contain: the point it makes, not just any output."""
PLOTS = {"locomo_benchmark.ipynb": 2}

nbformat = pytest.importorskip("nbformat", reason="the test extra (nbformat) is not installed")


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> Path:
    """A `python3` kernelspec running this interpreter, first on JUPYTER_PATH, so that a
    user-wide `python3` kernel of another Python cannot be picked instead."""
    from ipykernel.kernelspec import write_kernel_spec

    root = tmp_path_factory.mktemp("jupyter")
    write_kernel_spec(root / "kernels" / "python3")
    return root


def test_the_cookbook_has_its_notebooks():
    assert set(EXPECTED) <= set(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_committed_with_its_outputs(name):
    book = nbformat.read(COOKBOOK / name, as_version=4)
    code = [c for c in book.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), \
        f"{name}: run it top to bottom (python scripts/run_notebooks.py) before committing"
    check_outputs(name, [o for c in code for o in c.outputs])
    stored = nbformat.writes(book)
    assert str(COOKBOOK.parents[1]) not in stored, f"{name}: its outputs show a local path"


def check_outputs(name: str, outputs: list) -> None:
    """No error, the notebook's point printed, its plots drawn."""
    assert not [o for o in outputs if o.output_type == "error"]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    for text in EXPECTED.get(name, []):
        assert text in printed, f"{name}: {text!r} not in its output"
    plots = sum("image/png" in o.get("data", {}) for o in outputs)
    assert plots >= PLOTS.get(name, 0), f"{name}: {plots} plots"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_offline(name, kernels, monkeypatch, tmp_path):
    """The LoCoMo notebook runs from a folder outside the checkout, as from an installed
    package; the others beside the scripts they import."""
    from nbclient import NotebookClient

    if name == "locomo_benchmark.ipynb" and not LOCOMO.is_file():
        pytest.skip("../shared/data/locomo/locomo10_dev.json is absent (it ships beside CI's "
                    "clone, not with the package)")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("RMM_LOCOMO", str(LOCOMO))
    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join(
        [str(kernels), *filter(None, [os.environ.get("JUPYTER_PATH")])]))
    book = nbformat.read(COOKBOOK / name, as_version=4)
    book.cells.append(nbformat.v4.new_code_cell("import sys\nprint(sys.prefix, end='')"))
    folder = tmp_path if name == "locomo_benchmark.ipynb" else COOKBOOK
    client = NotebookClient(book, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    kernel_prefix = book.cells.pop().outputs[0]["text"]
    assert kernel_prefix == sys.prefix, "the kernel ran another Python than the tests"
    check_outputs(name, [o for c in book.cells if c.cell_type == "code" for o in c.outputs])
    print(f"{name}: {seconds:.1f} s")
