"""A LangChain `Embeddings` passed as it is to `ReflectiveMemory.open(embedder=)`: the same
vectors rank the same as through the native path, a store keeps its dimension, texts go to
the framework in batches, and anything else is refused with a typed error."""

from __future__ import annotations

import numpy as np
import pytest
from embedding_parity import FACTS, assert_embeds_in_batches, assert_ranks_as_native
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from rmm_core import ReflectiveMemory
from rmm_core.errors import InvalidInputError
from rmm_core.models.embed_adapters import BatchEmbedder, as_embedder


class MiniLMEmbeddings(Embeddings):
    """The packaged MiniLM behind LangChain's interface; records what each call was given."""

    def __init__(self, native) -> None:
        self.native = native
        self.calls: list[list[str] | str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return self.native.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        self.calls.append(text)
        return self.native.embed([text])[0].tolist()


def test_the_same_vectors_rank_the_same_as_the_native_path(tmp_path, embedder):
    assert_ranks_as_native(tmp_path, embedder, MiniLMEmbeddings)


def test_texts_reach_the_framework_in_batches(tmp_path, embedder):
    lc = MiniLMEmbeddings(embedder)
    wrapper = assert_embeds_in_batches(tmp_path, lc, lc.calls, "MiniLMEmbeddings")
    vectors = wrapper.embed(FACTS)
    assert lc.calls == [FACTS]
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(FACTS), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_deterministic_fake_embedding_is_normalised_and_finds_a_fact(tmp_path):
    fake = DeterministicFakeEmbedding(size=48)
    raw = np.asarray(fake.embed_documents(FACTS[:2]))
    assert abs(np.linalg.norm(raw[0]) - 1.0) > 0.1  # LangChain's own rows are not unit
    wrapper = as_embedder(fake)
    assert isinstance(wrapper, BatchEmbedder)
    assert wrapper.source is fake
    np.testing.assert_allclose(wrapper.embed(FACTS[:2]),
                               raw / np.linalg.norm(raw, axis=1, keepdims=True), rtol=1e-5)
    with ReflectiveMemory.open(str(tmp_path / "fake.sqlite"), embedder=fake) as mem:
        for fact in FACTS:
            mem.add(fact, user_id="u1")
        assert mem.search(FACTS[3], user_id="u1", k=1)[0].memory.text == FACTS[3]


def test_a_store_refuses_an_embedding_of_another_dimension(tmp_path, embedder):
    path = str(tmp_path / "m.sqlite")
    with ReflectiveMemory.open(path, embedder=embedder) as mem:
        mem.add(FACTS[0], user_id="u1")
    with pytest.raises(InvalidInputError,
                       match=r"384 dimensions but the embedder DeterministicFakeEmbedding "
                             r"makes 64"):
        ReflectiveMemory.open(path, embedder=DeterministicFakeEmbedding(size=64))
    other = str(tmp_path / "fake.sqlite")
    with ReflectiveMemory.open(other, embedder=DeterministicFakeEmbedding(size=64)) as mem:
        mem.add(FACTS[0], user_id="u1")
    with pytest.raises(InvalidInputError, match=r"64 dimensions .* makes 384"):
        ReflectiveMemory.open(other, embedder=embedder)
    with ReflectiveMemory.open(other, embedder=DeterministicFakeEmbedding(size=64)) as mem:
        assert mem.search(FACTS[0], user_id="u1", k=1)[0].memory.text == FACTS[0]


class Ragged(Embeddings):
    def embed_documents(self, texts):
        return [[1.0, 0.0, 0.0][: 1 + i % 3] for i, _ in enumerate(texts)]

    def embed_query(self, text):
        return [1.0]


class Short(Embeddings):
    """One vector fewer than texts."""

    def embed_documents(self, texts):
        return [[1.0, 0.0]] * (len(texts) - 1)

    def embed_query(self, text):
        return [1.0, 0.0]


@pytest.mark.parametrize("bad, message", [
    (FakeListChatModel(responses=["hi"]), "expected a LangChain Embeddings as embedder, got "
                                          "FakeListChatModel"),
    ("text-embedding-3-small", "a LangChain Embeddings or a LlamaIndex BaseEmbedding; got str"),
    (Short(), r"answered 1 texts with list of shape \(0,\)"),
])
def test_a_bad_embedder_is_refused_at_open(tmp_path, bad, message):
    with pytest.raises(InvalidInputError, match=message):
        ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=bad)


def test_vectors_of_uneven_length_are_refused():
    wrapper = BatchEmbedder(Ragged().embed_documents, name="Ragged", dim=3)
    with pytest.raises(InvalidInputError, match="Ragged answered 3 texts .* not one vector"):
        wrapper.embed(["a", "b", "c"])


def test_a_fake_embedding_still_scores_a_word_match_above_zero_in_order(tmp_path):
    """DeterministicFakeEmbedding knows no meaning: its cosines are noise near 0, so a
    hit's score comes from the share of the query's words it says."""
    with ReflectiveMemory.open(str(tmp_path / "fake.sqlite"),
                               embedder=DeterministicFakeEmbedding(size=48)) as mem:
        for fact in FACTS:
            mem.add(fact, user_id="u1")
        hits = mem.search(FACTS[3], user_id="u1", k=len(FACTS))
        scores = [h.score for h in hits]
        assert hits[0].memory.text == FACTS[3]
        assert scores[0] >= 0.3
        assert scores == sorted(scores, reverse=True)
        kept = mem.search(FACTS[3], user_id="u1", k=len(FACTS), min_score=0.3)
        assert [h.memory.id for h in kept] == [h.memory.id for h in hits][:len(kept)]
        assert kept[0].memory.text == FACTS[3]
