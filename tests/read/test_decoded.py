"""Memories a search decoded are kept for the next search at the same bank generation
(`UserIndex.decoded`): every change that search can show, validity included, must reach it,
and a caller changing a hit must not change the next search's."""

from __future__ import annotations

import pickle

import pytest

from rmm_core.types import FactChange, from_iso

pytestmark = pytest.mark.backends


def _leeds_then_york(mem):
    mem.add("I live in Leeds, near the university.", user_id="ana", occurred_at="2024-01-10")
    mem.add("We moved from Leeds to York in May.", user_id="ana", occurred_at="2024-06-02")


def test_a_change_recorded_after_a_search_reaches_the_next_one(open_memory):
    mem = open_memory()
    mem.add("I live in Leeds, near the university.", user_id="ana", occurred_at="2024-01-10")
    before = mem.search("Where do I live?", user_id="ana", k=3)
    assert all(h.memory.current for h in before)
    mem.add("We moved from Leeds to York in May.", user_id="ana", occurred_at="2024-06-02")
    leeds = next(h for h in mem.search("Where do I live?", user_id="ana", k=3)
                 if h.memory.text.startswith("I live"))
    assert not leeds.memory.current
    assert leeds.memory.superseded_by is not None


def test_a_change_recorded_between_a_write_and_its_rules_reaches_the_next_search(open_memory):
    """A search may run between a write and the supersession its rules then record (another
    thread, another process): the record itself must make the next search read afresh."""
    mem = open_memory(supersession=False)
    _leeds_then_york(mem)
    hits = mem.search("Where do I live?", user_id="ana", k=3).hits
    assert all(h.memory.current for h in hits)
    leeds, york = (next(h.memory.id for h in hits if h.memory.text.startswith(start))
                   for start in ("I live", "We moved"))
    mem.store.record_changes("ana", [FactChange(leeds, york, from_iso("2024-06-02"),
                                                "supersedes")])
    again = {h.memory.id: h.memory for h in mem.search("Where do I live?", user_id="ana",
                                                          k=3).hits}
    assert again[leeds].superseded_by == york
    assert leeds in again[york].supersedes


def test_deleting_the_successor_makes_the_older_memory_current_in_the_next_search(open_memory):
    mem = open_memory()
    _leeds_then_york(mem)
    hits = mem.search("Where do I live?", user_id="ana", k=3).hits
    leeds = next(h for h in hits if h.memory.text.startswith("I live"))
    assert not leeds.memory.current
    mem.delete(leeds.memory.superseded_by, user_id="ana")
    again = mem.search("Where do I live?", user_id="ana", k=3).hits
    assert [h.memory.text for h in again] == ["I live in Leeds, near the university."]
    assert again[0].memory.current


def test_changing_a_returned_memory_leaves_the_next_search_alone(open_memory):
    mem = open_memory()
    _leeds_then_york(mem)
    first = mem.search("Where do I live?", user_id="ana", k=3).hits
    for hit in first:
        hit.memory.text = "changed by the caller"
        hit.memory.superseded_by = None
    again = mem.search("Where do I live?", user_id="ana", k=3).hits
    assert "changed by the caller" not in {h.memory.text for h in again}
    assert any(h.memory.superseded_by for h in again)


def test_changing_a_candidate_leaves_the_next_search_alone(open_memory):
    mem = open_memory()
    _leeds_then_york(mem)
    first = mem.search("Where do I live?", user_id="ana", k=1)
    assert len(first.candidates) == 2  # scored when read, after the hits were returned
    shown = first.hits[0].memory
    assert next(c.memory for c in first.candidates if c.memory.id == shown.id) is shown
    for candidate in first.candidates:
        candidate.memory.text = "changed by the caller"
    again = mem.search("Where do I live?", user_id="ana", k=3)
    assert "changed by the caller" not in {c.memory.text for c in again.candidates}
    assert "changed by the caller" not in {h.memory.text for h in again}


def test_candidates_read_late_score_as_the_hits_do(open_memory):
    mem = open_memory()
    _leeds_then_york(mem)
    result = mem.search("Where do I live?", user_id="ana", k=3)
    scored = {c.memory.id: c.score for c in result.candidates}
    top = result.hits[0]
    assert scored[top.memory.id] == pytest.approx(top.score)
    assert all(0.0 <= s <= 1.0 for s in scored.values())


def test_a_result_pickles_with_its_candidates(open_memory):
    mem = open_memory()
    _leeds_then_york(mem)
    result = mem.search("Where do I live?", user_id="ana", k=1)
    again = pickle.loads(pickle.dumps(result))
    assert [h.text for h in again] == [h.text for h in result]
    assert [(c.memory.id, c.score) for c in again.candidates] == \
        [(c.memory.id, c.score) for c in result.candidates]
