"""Writes through a real `rmm mcp` over stdio, as a client meets them: an `add` retried
after a timeout (in turn, and racing the first call) stores nothing twice; a time at the
ends of the calendar is refused with a typed error, nothing logged, and the server goes on
reflecting the next conversation."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_helpers import call, refused, stdio_session  # noqa: E402

CHAT = [{"role": "user", "content": "We adopted a beagle called Biscuit."},
        {"role": "assistant", "content": "Biscuit is a lovely name for a beagle!"}]


async def test_an_add_retried_stores_nothing_twice(tmp_path):
    async with stdio_session(tmp_path / "m.sqlite", "--user", "ana") as s:
        [fact] = (await call(s, "add", content="I like green tea."))["added"]
        again = (await call(s, "add", content="I like green tea."))["added"]
        first = (await call(s, "add", content=CHAT))["added"]
        retried = (await call(s, "add", content=CHAT))["added"]
        raced = await asyncio.gather(*(call(s, "add", content="I take the 7:40 train.",
                                            agent_id="commute") for _ in range(3)))
        profile = await call(s, "profile")
        hits = (await call(s, "search", query="What is my dog called?", k=10))["hits"]
        tea = (await call(s, "search", query="What tea do I like?", k=10))["hits"]
    assert [m["id"] for m in again] == [fact["id"]]
    assert first
    assert retried == []
    assert len({r["added"][0]["id"] for r in raced}) == 1
    assert profile["memories"] == 1 + len(first) + 1
    assert sum("Biscuit" in h["memory_text"] for h in hits) == 1
    assert [h["id"] for h in tea].count(fact["id"]) == 1


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:00-14:00"])
async def test_a_time_at_the_ends_of_the_calendar_is_refused_and_nothing_logged(tmp_path,
                                                                              when):
    said = "Yesterday I ran ten kilometres."
    async with stdio_session(tmp_path / "m.sqlite", "--user", "ana") as s:
        errors = [await refused(s, "add", content=said, occurred_at=when),
                  await refused(s, "add", content=[{"role": "user", "content": said}],
                                occurred_at=when),
                  await refused(s, "add", content=[{"role": "user", "content": said,
                                                    "timestamp": when}]),
                  await refused(s, "search", query="When did I run?", as_of=when)]
        assert (await call(s, "profile"))["memories"] == 0
        added = (await call(s, "add", content=[{"role": "user", "content": said,
                                                "timestamp": "2024-05-02T08:00:00+14:00"}]
                            ))["added"]
    for error in errors:
        assert "InvalidInputError" in error
        assert "outside the years 100-9899" in error
        assert "OverflowError" not in error
    assert "Yesterday (1 May 2024)" in added[0]["text"]
