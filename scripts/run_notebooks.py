"""Run every cookbook notebook (or those named) top to bottom and store its outputs in place.

    HF_HUB_OFFLINE=1 RMM_LOCOMO=path/to/locomo10.json .venv/bin/python scripts/run_notebooks.py

Each runs on a fresh kernel of this Python, in the cookbook folder (the LoCoMo notebook needs
`RMM_LOCOMO`). tests/test_notebooks.py checks the stored outputs and runs them again.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import nbformat
from ipykernel.kernelspec import write_kernel_spec
from nbclient import NotebookClient

COOKBOOK = Path(__file__).resolve().parents[1] / "cookbook"


def main(names: list[str]) -> None:
    kernels = Path(tempfile.mkdtemp())
    write_kernel_spec(kernels / "kernels" / "python3")  # this Python, not a user-wide kernel
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [str(kernels), *filter(None, [os.environ.get("JUPYTER_PATH")])])
    # without it, platformdirs warns with the venv's path, which would land in the outputs
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
    for path in [COOKBOOK / n for n in names] or sorted(COOKBOOK.glob("*.ipynb")):
        book = nbformat.read(path, as_version=4)
        NotebookClient(book, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(COOKBOOK)}}).execute()
        nbformat.write(book, path)
        print(f"ran {path.name}")


if __name__ == "__main__":
    main(sys.argv[1:])
