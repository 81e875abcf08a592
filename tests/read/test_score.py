"""A hit's score (`read/score.py`): its match (relevance capped by the hits above) times what
its place leaves of it. Hand-built hits for the arithmetic; the packaged sample memory and
the real embedder for what a user met: hits moved up by the read steps no longer tie the
hits below them."""

from __future__ import annotations

import pytest

from rmm_core.ops.sessions_file import read_sessions, sample_path
from rmm_core.read.score import PLACE, place_discount, scored
from rmm_core.types import Memory, MemoryHit


def hits(*ids: str) -> list[MemoryHit]:
    return [MemoryHit(Memory(id=i, user_id="u", text=i, key=i, refs=[]), 0.0, i, n)
            for n, i in enumerate(ids, 1)]


def test_a_score_is_its_match_times_its_places_discount():
    got = scored(hits("a", "b", "c", "d"), {"a": 0.6, "b": 0.7, "c": 0.4, "d": 0.5})
    assert [s.relevance for s in got] == [0.6, 0.7, 0.4, 0.5]
    assert [s.match for s in got] == [0.6, 0.6, 0.4, 0.4]
    assert [s.capped_by for s in got] == [None, 1, None, 3]
    assert [s.place for s in got] == [1, 2, 3, 4]
    assert [s.value for s in got] == [0.6 * (1 - PLACE * (1 - 1 / n)) for n in (1, 2)] + \
        [0.4 * (1 - PLACE * (1 - 1 / n)) for n in (3, 4)]
    assert got[0].value == 0.6  # the first hit's score is its relevance
    assert all(s.discount == place_discount(s.place) for s in got)


def test_equal_relevance_no_longer_ties_and_scores_fall_down_the_list():
    got = [s.value for s in scored(hits(*"abcdefg"), dict.fromkeys("abcdefg", 0.401))]
    assert all(a > b for a, b in zip(got, got[1:]))
    assert all(0.0 < s <= 1.0 for s in got)


def test_min_score_keeps_a_prefix_and_a_longer_list_starts_with_a_shorter_ones_scores():
    relevance = {"a": 0.9, "b": 0.2, "c": 0.8, "d": 0.7}
    every = scored(hits("a", "b", "c", "d"), relevance)
    assert scored(hits("a", "b"), relevance) == every[:2]
    floor = every[1].value
    assert scored(hits("a", "b", "c", "d"), relevance, floor) == every[:2]
    assert scored(hits("a", "b", "c", "d"), relevance, 0.95) == []


def test_the_hits_the_read_steps_move_up_no_longer_tie_those_below(open_memory):
    """The reported case: seven of nine hits scored 0.401, capped by a hit a read step moved
    up; their relevances differ, and so do their places."""
    mem = open_memory()
    mem.add_sessions(read_sessions(sample_path()), user_id="maya", progress=False)
    result = mem.search("What shifts does Maya work?", user_id="maya", k=9)
    scores = [h.score for h in result]
    assert len(scores) == 9
    assert all(a > b for a, b in zip(scores, scores[1:])), scores
    relevance = {c.memory.id: c.score for c in result.candidates}
    assert scores[0] == pytest.approx(relevance[result[0].memory.id])
    for hit in result:
        assert hit.score <= relevance[hit.memory.id] * place_discount(hit.rank) + 1e-12
