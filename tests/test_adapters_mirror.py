"""The LangChain and LlamaIndex adapters mirror each other: the same hit metadata, the same
argument checks (`rmm_core.adapter_guard.check_arguments`) with the same messages."""

from __future__ import annotations

import pytest

from rmm_core import ReflectiveMemory
from rmm_core.errors import InvalidInputError
from rmm_core.testing import DeterministicEmbedder

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from langchain_rmm import RMMRetriever  # noqa: E402
from langchain_rmm.converters import hits_to_documents  # noqa: E402
from llamaindex_rmm import RMMMemoryBlock, RMMReranker, hits_to_nodes  # noqa: E402
from llamaindex_rmm.converters import MEMORY_ID_KEY  # noqa: E402


@pytest.fixture
def mem():
    memory = ReflectiveMemory.open(":memory:", embedder=DeterministicEmbedder())
    memory.add_session([{"speaker": "Ann", "text": "I adopted a beagle called Rex."},
                        {"speaker": "Bob", "text": "Rex is a lovely name for a beagle."}],
                       user_id="u", session_id="s1")
    yield memory
    memory.close()


SCHEMA = ["memory_id", "score", "rank", "refs", "session_ids", "occurred_at", "created_at",
          "updated_at", "current", "valid_from", "valid_to", "superseded_by", "supersedes",
          "conflicts"]
"""The keys docs/concepts.md lists for both adapters."""


def test_both_adapters_carry_the_same_hit_metadata(mem):
    hits = mem.search("beagle Rex", user_id="u", k=3).hits
    assert hits
    assert list(hits[0].metadata()) == SCHEMA
    documents, nodes = hits_to_documents(hits), hits_to_nodes(hits)
    for hit, document, node in zip(hits, documents, nodes):
        ours = {k: v for k, v in node.node.metadata.items() if k != MEMORY_ID_KEY}
        assert document.metadata == hit.metadata()
        assert ours == hit.metadata()
        assert node.node.metadata[MEMORY_ID_KEY] == document.id == hit.memory.id


@pytest.mark.parametrize("bad, message", [
    ({"memory": None}, "memory must be a ReflectiveMemory, not NoneType"),
    ({"user_id": ""}, "user_id must be 1-512 characters"),
    ({"user_id": 7}, "user_id must be a string, not int"),
])
def test_both_adapters_refuse_bad_arguments_alike(mem, bad, message):
    for adapter in (RMMRetriever, RMMMemoryBlock, RMMReranker):
        with pytest.raises(InvalidInputError, match=message):
            adapter(**{"memory": mem, "user_id": "u", **bad})
