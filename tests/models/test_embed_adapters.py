"""Framework embeddings reach the core through entry points, as LLMs do: the adapter
packages declare their wrappers, `as_embedder` finds them by the object's package, and
`BatchEmbedder` turns a framework's batch call into the core's normalised float32 rows."""

import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import entry_points

import numpy as np
import pytest

from rmm_core.errors import InvalidInputError
from rmm_core.models.embed import HashEmbedder
from rmm_core.models.embed_adapters import (
    ADAPTER_GROUP,
    PROBE_TEXT,
    BatchEmbedder,
    as_embedder,
    register_embedder_adapter,
)


def test_the_adapters_declare_their_wrappers():
    declared = {ep.name: ep.value for ep in entry_points(group=ADAPTER_GROUP)}
    assert declared == {"langchain_core": "langchain_rmm.embeddings:wrap_embeddings",
                        "llama_index": "llamaindex_rmm.embeddings:wrap_embedding"}


@pytest.mark.parametrize("setup, name", [
    ("from langchain_core.embeddings import DeterministicFakeEmbedding\n"
     "obj = DeterministicFakeEmbedding(size=12)", "DeterministicFakeEmbedding"),
    ("from llama_index.core.embeddings import MockEmbedding\nobj = MockEmbedding(embed_dim=12)",
     "MockEmbedding"),
])
def test_a_framework_embedding_works_when_only_the_framework_was_imported(setup, name):
    code = (f"{setup}\nfrom rmm_core import ReflectiveMemory\n"
            "import sys\nassert not any(m.endswith('_rmm') for m in sys.modules)\n"
            "mem = ReflectiveMemory.open(':memory:', embedder=obj)\n"
            "mem.add('My dog is called Biscuit.', user_id='u')\n"
            "print(type(mem.embedder).__name__, mem.embedder.name, mem.embedder.dim,\n"
            "      len(mem.search('dog', user_id='u').hits))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == ["BatchEmbedder", name, "12", "1"]


def test_a_registered_adapter_wraps_its_package_objects():
    Foreign = type("Foreign", (), {"__module__": "someframework.embeddings",
                                   "vectors": lambda self, texts: [[3.0, 4.0]] * len(texts)})
    register_embedder_adapter(
        "someframework", lambda obj: BatchEmbedder(obj.vectors, name="Foreign"))
    wrapped = as_embedder(Foreign())
    assert wrapped.dim == 2
    np.testing.assert_allclose(wrapped.embed(["a", "b"]), [[0.6, 0.8], [0.6, 0.8]])


def test_a_core_embedder_is_used_as_it_is():
    native = HashEmbedder(16)
    assert as_embedder(native) is native
    native.dim = np.int64(16)  # a dimension read off an array
    assert as_embedder(native) is native


@pytest.mark.parametrize("bad", [
    type("NoDim", (), {"embed": lambda self, texts: None})(),
    type("NotCallable", (), {"embed": "x", "dim": 3})(),
    "minilm", 384, None,
])
def test_anything_else_names_what_is_accepted(bad):
    with pytest.raises(InvalidInputError, match="an Embedder .* a LangChain Embeddings or a "
                                                "LlamaIndex BaseEmbedding; got"):
        as_embedder(bad)


class Recorder:
    def __init__(self, rows):
        self.rows, self.calls = rows, []

    def __call__(self, texts):
        self.calls.append(texts)
        return self.rows[: len(texts)]


def test_a_stated_dimension_skips_the_probe_and_a_wrong_one_is_not_trusted():
    batch = Recorder([[0.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    stated = BatchEmbedder(batch, name="r", dim=3)
    assert batch.calls == []
    assert stated.embed([]).shape == (0, 3)
    assert batch.calls == []
    out = stated.embed(["a", "b"])
    assert out.dtype == np.float32
    assert out.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(out, [[0, 0, 1], [0, 0, 0]])  # a zero row stays zero
    for not_a_dim in (None, True, 0, -3, "3", 3.0):
        probed = BatchEmbedder(batch, name="r", dim=not_a_dim)
        assert probed.dim == 3
        assert batch.calls[-1] == [PROBE_TEXT]


def test_vectors_that_are_not_finite_are_refused():
    wrapper = BatchEmbedder(lambda texts: [[1.0, float("nan")]] * len(texts), name="nan", dim=2)
    with pytest.raises(InvalidInputError, match="embedder nan made vectors that are not finite"):
        wrapper.embed(["a"])


def test_the_framework_is_called_from_one_thread_at_a_time():
    """Searches and the background worker embed at once; a model that breaks under
    concurrent calls (a local tokenizer) must see them one after another."""
    inside, most = [0], [0]
    guard = threading.Lock()

    def batch(texts):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.01)
        with guard:
            inside[0] -= 1
        return [[1.0, 0.0]] * len(texts)

    wrapper = BatchEmbedder(batch, name="slow", dim=2)
    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(lambda i: wrapper.embed([f"text {i}"] * (1 + i % 3)), range(16)))
    assert [len(v) for v in done] == [1 + i % 3 for i in range(16)]
    assert most[0] == 1
