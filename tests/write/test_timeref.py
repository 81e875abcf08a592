"""Relative times are grounded in dates when a session is reflected: the memory (and so the
hit) reads "yesterday (7 May 2023)", the raw turn stays as it was said."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest

from rmm_core.bench.dates import calendar_date, date_in_context
from rmm_core.language.timeref import ground
from rmm_core.read.context import format_date
from rmm_core.types import utcnow

SAID = datetime(2023, 5, 8, 13, 56)  # a Monday


@pytest.mark.parametrize(("text", "grounded"), [
    ("I went to a support group yesterday.", "yesterday (7 May 2023)."),
    ("the day before yesterday", "the day before yesterday (6 May 2023)"),
    ("See you tomorrow!", "tomorrow (9 May 2023)!"),
    ("We hiked last Friday", "last Friday (5 May 2023)"),
    ("next Friday works", "next Friday (12 May 2023) works"),
    ("It was busy last week", "last week (the week of 1 May 2023)"),
    ("last weekend we camped", "last weekend (the weekend of 6 May 2023)"),
    ("two weeks ago I painted", "two weeks ago (24 April 2023)"),
    ("3 days ago", "3 days ago (5 May 2023)"),
    ("I fly in 2 weeks", "in 2 weeks (22 May 2023)"),
    ("we won't be ready in 2 weeks", "in 2 weeks (22 May 2023)"),
    ("last month", "last month (April 2023)"),
    ("next month", "next month (June 2023)"),
    ("last year", "last year (2022)"),
    ("last summer we went to Spain", "last summer (summer 2022)"),
])
def test_relative_times_are_followed_by_what_they_meant(text, grounded):
    assert grounded in ground(text, SAID)


@pytest.mark.parametrize("text", [
    "a few days ago", "over the last year", "two days before the race", "today is nice",
    "I ran last", "in a few weeks",
])
def test_vague_or_anchored_times_stay_as_said(text):
    assert ground(text, SAID) == text


@pytest.mark.parametrize("text", [
    "haven't had a cigarette in 3 months", "not one drink in two weeks!",
    "never felt this good in 10 years", "my first time in 2 years on a bike",
])
def test_a_span_looked_back_over_is_no_time_ahead(text):
    """"Haven't smoked in 3 months" is three months up to now, not a date three months on."""
    assert ground(text, SAID) == text


def test_grounding_twice_changes_nothing_and_needs_a_date():
    once = ground("yesterday and last week", SAID)
    assert ground(once, SAID) == once
    assert ground("yesterday", None) == "yesterday"


def test_a_reflected_memory_carries_the_date_the_raw_turn_does_not(open_memory):
    mem = open_memory()
    said = "I went to a LGBTQ support group yesterday, it was powerful."
    mem.add_session([{"speaker": "Caroline", "text": said, "id": "D1:3"}], user_id="u1",
                    started_at="2023-05-08T13:56")
    assert mem.turns(user_id="u1")[0].text == said
    hit = mem.search("When did Caroline go to the support group?", user_id="u1", k=1)[0]
    assert "yesterday (7 May 2023)" in hit.text
    assert hit.refs == ["D1:3"]


@pytest.mark.parametrize(("answer", "day"), [
    ("7 May 2023", date(2023, 5, 7)), ("May 7, 2023", date(2023, 5, 7)),
    ("June 11th, 2023", date(2023, 6, 11)), ("On 3 Feb 2022.", date(2022, 2, 3)),
    ("The sunday before 25 May 2023", None), ("the week before 9 June 2023", None),
    ("2022", None), ("May 2023", None), ("7 May 2023 and 8 May 2023", None),
])
def test_the_bench_counts_answers_that_are_one_calendar_date(answer, day):
    assert calendar_date(answer) == day


def test_the_date_counts_in_context_only_within_the_budget():
    day = date(2023, 5, 7)
    for written in ("on 7 May 2023", "May 7, 2023", "2023-05-07", "7th May, 2023"):
        assert date_in_context([(written, ["a"])], day) == 1.0
    assert date_in_context([("8 May 2023", ["a"])], day) == 0.0
    long = ("word " * 999 + "7 May 2023", ["a"])
    assert date_in_context([long], day) == 0.0  # 1,002 words: does not fit 1,000


def test_a_fact_added_directly_is_dated_as_of_now(open_memory):
    mem = open_memory()
    before = utcnow()
    memory = mem.add("I moved to Berlin yesterday.", user_id="u1")[0]
    dates = {format_date(moment - timedelta(days=1)) for moment in (before, utcnow())}
    assert any(f"yesterday ({d})" in memory.text for d in dates), memory.text


def test_a_dated_fact_still_fits_its_passages(open_memory):
    mem = open_memory(search={"max_hit_words": 20})
    fact = ("I moved to Berlin yesterday and started a new job last week. "
            "Two weeks ago I sold my car and last month I finished my course.")
    memories = mem.add(fact, user_id="u1")
    assert "yesterday (" in memories[0].text
    assert len(memories) > 1
    assert all(len(f"user: {m.text}".split()) <= 20 for m in memories)
