"""`search(..., explain=True)`: each candidate's signals add up to the scores the search
ranked by, the budget cut is strict, provisional turns are marked, and a plain search has
no explanation. `rmm search --explain` prints it."""

from __future__ import annotations

import json
import math

import pytest

from rmm_core.cli import main
from rmm_core.ops.sessions_file import read_sessions, sample_path
from rmm_core.read.explain import format_explanation
from rmm_core.read.score import place_discount

QUERY = "where do I live now?"


@pytest.fixture
def sample(open_memory):
    def build(**settings):
        mem = open_memory(**settings)
        mem.add_sessions(read_sessions(sample_path()), user_id="maya", progress=False)
        return mem
    return build


def test_parts_add_up_to_what_the_search_ranked_by(sample):
    mem = sample()
    result = mem.search(QUERY, user_id="maya", k=4, explain=True)
    e = result.explanation
    assert [r.memory_id for r in e.hits] == [h.memory.id for h in result.hits]
    assert len(e.rows) == len(result.candidates)
    for row in e.rows:
        assert sum(row.rerank.values()) == pytest.approx(row.rerank_score, abs=1e-4)
        assert row.signals["bm25"] is not None
        assert row.signals["bm25"] >= 0
    assert set(e.weights) == set(e.rows[0].rerank) - {"retrieval_z"}
    assert mem.search(QUERY, user_id="maya", k=4).explanation is None


def test_each_hits_score_is_the_root_of_its_parts(sample):
    mem = sample()
    result = mem.search("Where does Maya live?", user_id="maya", k=9, explain=True)
    e = result.explanation
    assert [r.score.value for r in e.hits] == [h.score for h in result.hits]
    assert all(r.score is None for r in e.rows if r.final_rank is None)
    steps = 0
    for row in e.hits:
        match, place = row.score.parts
        assert match.value * place.value == pytest.approx(row.score.value, rel=1e-12)
        assert match.parts[0].value == row.relevance >= match.value
        assert place.value == place_discount(row.final_rank)
        if place.parts:  # the reranker's place, then each read step's move
            assert math.prod(p.value for p in place.parts) == pytest.approx(place.value)
            assert [p.description for p in place.parts[1:]] == \
                [f"{name} {before}→{after}" for name, before, after in row.moved]
            steps += 1
    assert steps  # this query's hits are moved by the read steps
    rows = e.as_dict()["rows"]
    assert rows[0]["score"]["value"] == result.hits[0].score
    assert "score: " in format_explanation(e)


def test_signal_scale_is_the_one_the_fusion_used(sample):
    """With neighbour smoothing off, the fused score is exactly the z-scored signals: the
    remainder the explanation calls `neighbours` must then be zero."""
    mem = sample(fusion={"neighbour_smoothing": 0.0})
    e = mem.search(QUERY, user_id="maya", k=5, explain=True).explanation
    assert e.rows
    assert all(r.retrieval["neighbours"] == pytest.approx(0.0, abs=1e-4)
                          for r in e.rows)


def test_budget_cut_is_strict(sample):
    mem = sample()
    e = mem.search(QUERY, user_id="maya", k=5, explain=True).explanation
    words = [r.words for r in e.hits]
    assert e.cut(sum(words)) == len(words)
    assert e.cut(sum(words[:2])) == 2
    assert e.cut(words[0] - 1) == 0  # an oversized first hit ends the list
    e.budget = words[0]
    assert "hold the first 1 of" in format_explanation(e)


def test_provisional_turns_are_marked(open_memory):
    mem = open_memory()
    mem.append([{"speaker": "Maya", "text": "I just bought a red kayak for the lake."}],
               user_id="maya", session_id="open")
    e = mem.search("what boat did I buy?", user_id="maya", k=3, explain=True).explanation
    assert e.hits
    assert e.hits[0].provisional
    assert "[provisional]" in format_explanation(e)


def test_cli_prints_the_explanation(tmp_path, capsys, embedder):
    db = str(tmp_path / "m.sqlite")
    assert main(["--db", db, "add", "--user", "maya", "--sample"]) == 0
    capsys.readouterr()
    assert main(["--db", db, "search", "--user", "maya", QUERY, "--explain",
                 "--budget", "60"]) == 0
    out = capsys.readouterr().out
    assert "60 words of context hold the first" in out
    assert "bm25" in out
    assert "time: open turns" in out
    assert main(["--db", db, "search", "--user", "maya", QUERY, "--explain", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cut"] <= 5
    assert data["rows"][0]["final_rank"] == 1
    assert list(data["timings_ms"]) == ["open turns", "embed", "retrieval", "rerank",
                                        "read steps", "excerpts", "scores"]
    assert all(ms >= 0 for ms in data["timings_ms"].values())
    assert data["timings_ms"]["embed"] > 0
