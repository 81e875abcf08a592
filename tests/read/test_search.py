"""The search pipeline (`read/search.py`) assembled from its parts, without the front door,
over a real SQLite store and the real packaged embedder (no LLM)."""

import pytest

from rmm_core.config import MemoryConfig
from rmm_core.read.wiring import searcher_for
from rmm_core.storage import open_store
from rmm_core.types import Turn
from rmm_core.write.compress import FillerCompressor
from rmm_core.write.facts import fact_memories

FACTS = ["I play the cello in a small orchestra.", "My brother Tomas lives in Oslo.",
         "We adopted a grey kitten called Pixel."]


@pytest.fixture
def searcher(tmp_path, embedder):
    store = open_store(str(tmp_path / "m.sqlite"))
    config = MemoryConfig()
    for text in FACTS:
        store.add_memories("u", fact_memories(text, user_id="u", metadata={}, words=50,
                                              compressor=FillerCompressor(),
                                              embedder=embedder), source="direct")
    yield searcher_for(store, embedder, config)
    store.close()


def search(searcher, query, **kw):
    options = {"k": 2, "wanted": {}, "session_id": None, "follow_links": False,
               "explore": False, "min_score": None, **kw}
    return searcher.search(query, user_id="u", **options)


def test_the_best_memory_comes_first_with_its_text_and_a_relevance(searcher):
    result = search(searcher, "Where does Tomas live?")
    assert [h.memory.text for h in result][0] == FACTS[1]
    assert len(result.hits) == 2
    assert len(result.candidates) == len(FACTS)
    assert all(0.0 <= h.score <= 1.0 for h in result)
    assert result.state["ranking"] is not None
    assert search(searcher, "   ").hits == []
    assert search(searcher, "Where does Tomas live?", min_score=1.0).hits == []


def test_open_turns_are_hits_except_those_of_the_callers_session(searcher):
    searcher.store.append_turns("u", "chat", [Turn("user", "I bought a red canoe.", "c1")],
                                None, 0.0)
    hits = search(searcher, "What boat did I buy?", k=1).hits
    assert hits[0].refs == ["c1"]
    assert "c1" not in [r for h in search(searcher, "What boat did I buy?",
                                          session_id="chat").hits for r in h.refs]


def test_similarity_and_learned_scores_of_given_texts(searcher):
    assert searcher.best_similarity(FACTS[2], "u") == pytest.approx(1.0, abs=1e-3)
    assert searcher.best_similarity(FACTS[2], "nobody") == 0.0
    scores = searcher.learned_scores("kitten", ["a grey kitten", "a cello"], [None, None],
                                     user_id="u")
    assert len(scores) == 2
    assert scores[0] > scores[1]


def test_candidates_are_scored_on_the_hits_scale_with_their_retrieval_score_apart(searcher):
    result = search(searcher, "Where does Tomas live?")
    by_id = {c.memory.id: c for c in result.candidates}
    for hit in result:  # one scale: a hit's score is at most its relevance (match x place)
        assert hit.score <= by_id[hit.memory.id].score
        assert hit.retrieval is None
    assert result[0].score == by_id[result[0].memory.id].score
    assert all(0.0 <= c.score <= 1.0 for c in result.candidates)
    fused = [c.retrieval for c in result.candidates]
    assert None not in fused
    assert fused == sorted(fused, reverse=True)
    assert [c.rank for c in result.candidates] == list(range(1, len(FACTS) + 1))


def test_a_result_prints_short(searcher):
    searcher.store.add_memories("u", fact_memories(
        "My brother Tomas " + "really " * 400 + "likes Oslo.", user_id="u", metadata={},
        words=500, compressor=FillerCompressor(), embedder=searcher.embedder), source="direct")
    result = search(searcher, "Where does Tomas live?", k=3)
    shown = repr(result)
    assert len(shown) < 400
    assert "3 hits" in shown
    assert "Tomas" in shown
    assert repr(result[0]).startswith("MemoryHit(rank=1, score=")
    assert len(repr(result[0])) < 120
