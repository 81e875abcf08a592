"""A LlamaIndex `BaseEmbedding` passed as it is to `ReflectiveMemory.open(embedder=)`: the
same vectors rank the same as through the native path, a store keeps its dimension, texts go
to the framework in batches, and anything else is refused with a typed error."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from embedding_parity import FACTS, assert_embeds_in_batches, assert_ranks_as_native
from llama_index.core.embeddings import BaseEmbedding, MockEmbedding
from llama_index.core.llms import MockLLM
from pydantic import Field, PrivateAttr

from rmm_core import ReflectiveMemory
from rmm_core.errors import InvalidInputError
from rmm_core.models.embed_adapters import BatchEmbedder, as_embedder


class MiniLMEmbedding(BaseEmbedding):
    """The packaged MiniLM behind LlamaIndex's interface; records what each call was given
    (a list for a batch, a string for a single text or query)."""

    calls: list[Any] = Field(default_factory=list)
    _native: Any = PrivateAttr()

    def __init__(self, native: Any, **kwargs: Any) -> None:
        super().__init__(model_name="all-MiniLM-L6-v2", **kwargs)
        self._native = native

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return self._native.embed(texts).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        self.calls.append(text)
        return self._native.embed([text])[0].tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)


def test_the_same_vectors_rank_the_same_as_the_native_path(tmp_path, embedder):
    assert_ranks_as_native(tmp_path, embedder, MiniLMEmbedding)


def test_texts_reach_the_framework_in_batches(tmp_path, embedder):
    li = MiniLMEmbedding(embedder, embed_batch_size=3)
    wrapper = assert_embeds_in_batches(tmp_path, li, li.calls,
                                       "MiniLMEmbedding(all-MiniLM-L6-v2)")
    vectors = wrapper.embed(FACTS)
    assert li.calls == [FACTS[:3], FACTS[3:]]  # in chunks of its embed_batch_size
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(FACTS), 384)
    np.testing.assert_allclose(vectors, embedder.embed(FACTS), atol=1e-6)


def test_mock_embedding_states_its_dimension_and_is_normalised():
    mock = MockEmbedding(embed_dim=16)
    wrapper = as_embedder(mock)
    assert isinstance(wrapper, BatchEmbedder)
    assert wrapper.source is mock
    assert wrapper.dim == 16
    assert wrapper.name == "MockEmbedding"
    np.testing.assert_allclose(wrapper.embed(["a", "b"]), np.full((2, 16), 0.25))


def test_a_store_refuses_an_embedding_of_another_dimension(tmp_path, embedder):
    path = str(tmp_path / "m.sqlite")
    with ReflectiveMemory.open(path, embedder=embedder) as mem:
        mem.add(FACTS[0], user_id="u1")
    with pytest.raises(InvalidInputError,
                       match=r"384 dimensions but the embedder MockEmbedding makes 8"):
        ReflectiveMemory.open(path, embedder=MockEmbedding(embed_dim=8))
    other = str(tmp_path / "mock.sqlite")
    with ReflectiveMemory.open(other, embedder=MockEmbedding(embed_dim=8)) as mem:
        mem.add(FACTS[0], user_id="u1")
    with pytest.raises(InvalidInputError, match=r"8 dimensions .* MiniLMEmbedding\(all-MiniLM"
                                                r"-L6-v2\) makes 384"):
        ReflectiveMemory.open(other, embedder=MiniLMEmbedding(embedder))


class StatesTooMuch(MockEmbedding):
    """Says 16 dimensions, makes 4."""

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0]] * len(texts)


@pytest.mark.parametrize("bad, message", [
    (MockLLM(), "expected a LlamaIndex BaseEmbedding as embedder, got MockLLM"),
    (object(), "a LangChain Embeddings or a LlamaIndex BaseEmbedding; got object"),
])
def test_a_bad_embedder_is_refused_at_open(tmp_path, bad, message):
    with pytest.raises(InvalidInputError, match=message):
        ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=bad)


def test_vectors_of_another_width_than_stated_are_refused(tmp_path):
    with ReflectiveMemory.open(str(tmp_path / "m.sqlite"),
                               embedder=StatesTooMuch(embed_dim=16)) as mem:
        with pytest.raises(InvalidInputError, match="4 dimensions, not its 16"):
            mem.add(FACTS[0], user_id="u1")
        assert mem.memories(user_id="u1") == []
