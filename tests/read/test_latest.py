"""The latest value first: a later hit stating another value of what a present-tense question
asks about is read before the older one. Real memories and the rule itself; the last test
goes through a real SQLite store and the packaged embedder."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from rmm_core.read.latest import latest_first
from rmm_core.types import Memory, MemoryHit

DAY = datetime(2024, 5, 2, tzinfo=timezone.utc)


def _hits(*texts: str, days: list[int] | None = None) -> list[MemoryHit]:
    days = days or list(range(len(texts)))
    return [MemoryHit(Memory(id=f"m{i}", user_id="u", text=text, key=text, refs=[str(i)],
                             speakers=["user"], occurred_at=DAY + timedelta(days=day)),
                      1.0 - i / 10, text, i)
            for i, (text, day) in enumerate(zip(texts, days))]


def _ids(hits: list[MemoryHit]) -> list[str]:
    return [h.memory.id for h in hits]


OLD = "user: I only secured 3 interviews for producer roles, is that a good sign?"
NEW = "user: How can I use the fact that I secured 5 interviews to improve my resume?"
OTHER = "user: My resume lists my producer roles at two studios."


def test_a_later_count_of_what_is_asked_comes_before_the_older_one():
    hits = _hits(OLD, OTHER, NEW)
    assert _ids(latest_first(hits, "How many interviews have I secured?")) == ["m2", "m0", "m1"]


def test_a_question_about_the_past_keeps_the_ranking():
    hits = _hits(OLD, OTHER, NEW)
    assert _ids(latest_first(hits, "How many interviews did I secure in April?")) == \
        ["m0", "m1", "m2"]


def test_an_older_statement_ranked_lower_stays_where_it_is():
    hits = _hits(NEW, OLD, days=[1, 0])
    assert _ids(latest_first(hits, "How many interviews have I secured?")) == ["m0", "m1"]


def test_another_persons_value_does_not_replace_mine():
    sister = "user: My sister secured 5 interviews for producer roles last month."
    hits = _hits(OLD, sister)
    assert _ids(latest_first(hits, "How many interviews have I secured?")) == ["m0", "m1"]


def test_a_value_in_another_unit_is_no_update():
    hits = _hits("user: I run 5 km every morning before work.",
                 "user: These days I run for 40 minutes in the park.")
    assert _ids(latest_first(hits, "How far do I run in the morning?")) == ["m0", "m1"]


def test_a_question_or_a_plan_states_no_new_value():
    hits = _hits(OLD, "user: Should I aim for 5 interviews for producer roles next month?")
    assert _ids(latest_first(hits, "How many interviews have I secured?")) == ["m0", "m1"]


def test_a_count_said_without_its_unit_counts_what_the_question_names():
    hits = _hits("user: I mentored 5 women in Caribbean media this year.",
                 "user: I noticed the number of mentees I've worked with has increased to 7, "
                 "how can I show that?")
    assert _ids(latest_first(hits, "How many women are my mentees?")) == ["m1", "m0"]


def test_a_new_time_on_the_same_day_is_read_first_in_the_order_it_was_said():
    first = "user: I have a Zoom meeting with Professor Danielle on March 22 at 3 PM."
    moved = "user: Can you remind me that it's rescheduled to March 22 at 4:30 PM?"
    hits = _hits(first, moved, days=[0, 0])
    hits[1].memory.created_at = hits[0].memory.created_at + timedelta(seconds=1)
    assert _ids(latest_first(hits, "When is my meeting with Professor Danielle?")) == \
        ["m1", "m0"]


def test_search_reads_the_later_count_first(open_memory):
    mem = open_memory()
    mem.add("I feel proud that I published 4 articles on urban gardening, is that enough "
            "for a portfolio?", user_id="ana", occurred_at="2024-03-01")
    mem.add("Good news on the blog side, I now have 9 articles on urban gardening out there.",
            user_id="ana", occurred_at="2024-05-01")
    hits = mem.search("How many articles on urban gardening have I published?",
                      user_id="ana", k=2)
    assert "9 articles" in hits[0].text
    assert "4 articles" in hits[1].text
    assert [h.rank for h in hits] == [1, 2]
