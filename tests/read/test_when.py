"""Questions that name a time prefer the memories of that time. Parsing is tested as such;
the ranking through a real SQLite store and the packaged embedder."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from rmm_core.read.when import LIFT, Period, named_period, of_period, prefer_period
from rmm_core.types import Memory, MemoryHit

NOW = date(2023, 8, 20)


@pytest.mark.parametrize(("question", "period"), [
    ("What setback did Melanie face in October 2023?",
     Period(date(2023, 10, 1), date(2023, 10, 31))),
    ("What did she show on October 13, 2023?", Period(date(2023, 10, 12), date(2023, 10, 14))),
    ("What did Gina find on 1 February, 2023?", Period(date(2023, 1, 31), date(2023, 2, 2))),
    ("When did Melanie go camping in June?", Period(month=6)),
    ("How often did I swim in 2022?", Period(date(2022, 1, 1), date(2022, 12, 31))),
    ("What did we do last summer?", Period(date(2022, 6, 1), date(2022, 8, 31))),
    ("Where did I go last year?", Period(date(2022, 1, 1), date(2022, 12, 31))),
    ("What did I eat yesterday?", Period(date(2023, 8, 18), date(2023, 8, 20))),
    ("What happened last week?", Period(date(2023, 8, 7), date(2023, 8, 13))),
])
def test_the_time_a_question_names(question, period):
    assert named_period(question, NOW) == period


@pytest.mark.parametrize("question", ["Where do I live?", "I may go to the gym, should I?",
                                      "What is my budget for 2 people?"])
def test_a_question_naming_no_time(question):
    assert named_period(question, NOW) is None


def _memory(i: int, text: str, said: datetime) -> Memory:
    return Memory(id=f"m{i}", user_id="u", text=text, key=text, refs=[str(i)],
                  occurred_at=said)


def test_a_memory_is_of_a_time_when_said_then_or_naming_a_date_of_it():
    october = Period(date(2023, 10, 1), date(2023, 10, 31))
    said_then = _memory(0, "I fell off my bike.", datetime(2023, 10, 4))
    naming = _memory(1, "My bike fell apart last month (September 2023) and again on "
                        "October 2, 2023.", datetime(2023, 11, 1))
    neither = _memory(2, "I bought a bike.", datetime(2023, 5, 1))
    assert of_period(said_then, october)
    assert of_period(naming, october)
    assert not of_period(neither, october)
    assert of_period(naming, Period(month=9))


def test_a_memory_of_the_named_time_moves_up_a_few_ranks_not_to_the_top():
    day = datetime(2023, 5, 1, tzinfo=timezone.utc)
    hits = [MemoryHit(_memory(i, f"note {i}", day), 1.0 - i / 100, f"note {i}", i)
            for i in range(LIFT + 6)]
    late = LIFT + 3
    hits[late] = MemoryHit(_memory(late, "note", day + timedelta(days=160)), 0.5, "note", late)
    order = [h.memory.id for h in prefer_period(hits, Period(month=10))]
    assert order.index(f"m{late}") == 3
    assert order[:3] == ["m0", "m1", "m2"]


def test_search_prefers_the_memory_of_the_month_asked_about(open_memory):
    mem = open_memory()
    mem.add("I baked sourdough bread with rye flour for the neighbours.", user_id="ana",
            occurred_at="2024-05-12")
    mem.add("I baked a lemon cake for the school fair.", user_id="ana",
            occurred_at="2024-03-09")
    hits = mem.search("What did I bake in March 2024?", user_id="ana", k=2)
    assert "lemon cake" in hits[0].text
    assert [h.rank for h in hits] == [1, 2]
    assert "sourdough" in mem.search("What did I bake in May 2024?", user_id="ana",
                                     k=2)[0].text


def test_relative_times_in_a_question_are_resolved_against_as_of(open_memory):
    mem = open_memory()
    mem.add("I baked sourdough bread with rye flour for the neighbours.", user_id="ana",
            occurred_at="2024-02-12")
    mem.add("I baked a lemon cake for the school fair.", user_id="ana",
            occurred_at="2024-03-09")
    asked = "What did I bake last month?"
    assert "lemon cake" in mem.search(asked, user_id="ana", k=2, as_of="2024-04-10")[0].text
    assert "sourdough" in mem.search(asked, user_id="ana", k=2, as_of="2024-03-20")[0].text


def test_hits_all_of_the_named_time_keep_their_order():
    """When every hit is of the named time, none is lifted: a user's question ("how do I
    count permutations?") may be the turn asked about."""
    day = datetime(2024, 4, 5, tzinfo=timezone.utc)
    said = ["user: how do I count permutations of 5 books?", "user: I scored 9/10 on the quiz",
            "user: can you check my answer to problem 3?"]
    hits = [MemoryHit(_memory(i, text, day), 1.0 - i / 10, text, i + 1)
            for i, text in enumerate(said)]
    order = prefer_period(hits, Period(date(2024, 4, 4), date(2024, 4, 6)))
    assert [h.memory.id for h in order] == ["m0", "m1", "m2"]
