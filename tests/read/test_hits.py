"""What a user meets first: a re-run script, a hit's score, a printed answer, quiet logging.

`test_printed_answer_is_short` uses a scripted fake LLM (a callable returning fixed text).
"""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from rmm_core import InvalidInputError, ReflectiveMemory, Turn
from rmm_core.errors import DuplicateTurnError

SESSION = [Turn("Caroline", "I went to an LGBTQ support group yesterday.", id="D1:3"),
           Turn("Melanie", "That's brave! I painted a sunrise with my kids last week.", id="D1:4")]
TEXTS = ["I adopted a beagle puppy called Rex last spring.",
         "My sister is getting married in Lisbon next June.",
         "I started learning the cello with a teacher called Mrs Alvarez.",
         "We repainted the kitchen a pale green colour."]


@pytest.fixture
def bank(open_memory) -> ReflectiveMemory:
    mem = open_memory()
    for i, text in enumerate(TEXTS):
        mem.add_session([Turn("user", text)], user_id="u1", session_id=f"s{i}")
    return mem


def test_adding_the_same_session_twice_is_a_no_op(open_memory):
    mem = open_memory()
    assert mem.add_session(SESSION, user_id="u1")
    memories, turns = mem.memories(user_id="u1"), mem.turns(user_id="u1")
    assert mem.add_session(SESSION, user_id="u1") == []
    mem = open_memory()  # a second run of the same script
    assert mem.add_session(SESSION, user_id="u1") == []
    assert [m.id for m in mem.memories(user_id="u1")] == [m.id for m in memories]
    assert mem.turns(user_id="u1") == turns


def test_a_reused_turn_id_with_other_words_still_raises(open_memory):
    mem = open_memory()
    mem.add_session(SESSION, user_id="u1")
    changed = [SESSION[0], Turn("Melanie", "I painted a sunset.", id="D1:4")]
    with pytest.raises(DuplicateTurnError, match="D1:3"):
        mem.add_session(changed, user_id="u1")
    with pytest.raises(DuplicateTurnError):  # a new turn beside a stored one
        mem.add_session([SESSION[0], Turn("Melanie", "New.", id="D1:5")], user_id="u1")
    assert len(mem.turns(user_id="u1")) == 2


def test_a_single_hit_has_a_positive_score(open_memory):
    mem = open_memory()
    mem.add_session(SESSION, user_id="u1")
    hits = mem.search("When did Melanie paint a sunrise?", user_id="u1", k=3).hits
    assert len(hits) == 1
    assert 0.3 < hits[0].score <= 1.0


def test_scores_are_relevance_in_zero_one_comparable_across_queries(bank):
    on_topic = bank.search("What is the name of my dog?", user_id="u1", k=4)
    off_topic = bank.search("quarterly tax filing deadline for corporations", user_id="u1", k=4)
    for hit in [*on_topic, *off_topic]:
        assert 0.0 <= hit.score <= 1.0
    assert "Rex" in on_topic[0].text
    assert on_topic[0].score > max(h.score for h in off_topic) + 0.1


def test_min_score_drops_weak_hits(bank):
    every = bank.search("What is the name of my dog?", user_id="u1", k=4)
    threshold = (every[0].score + max(h.score for h in every[1:])) / 2
    kept = bank.search("What is the name of my dog?", user_id="u1", k=4, min_score=threshold)
    assert [h.memory.id for h in kept] == [every[0].memory.id]
    assert [h.rank for h in kept] == [1]
    assert not bank.search("What is the name of my dog?", user_id="u1", k=4, min_score=1.0).hits
    for bad in (-0.1, 1.5, "0.5", True):
        with pytest.raises(InvalidInputError, match="min_score"):
            bank.search("dog", user_id="u1", min_score=bad)


def test_printed_answer_is_short(bank):
    answer = bank.respond("What is my dog called?", user_id="u1", k=4,
                          llm=lambda prompt: "Your dog is Rex [1].", explore=False)
    shown = repr(answer)
    assert len(shown) < 300
    assert "Rex" in shown
    assert answer.cited_ids[0] in shown


def test_bm25s_logs_at_the_applications_level():
    code = ("import logging; from rmm_core.read.index import bm25_index; bm25_index([['a']]); "
            "print(logging.getLogger('bm25s').getEffectiveLevel())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == str(logging.WARNING)


