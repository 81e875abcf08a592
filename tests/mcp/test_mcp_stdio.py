"""`rmm mcp` over stdio, through the SDK's own client, on a real SQLite file with the
packaged embedder: every tool, bad input for each, a fixed user, forget only when allowed,
concurrent calls, and no acknowledged write lost when the server is killed."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_helpers import call, is_error, refused, stdio_session  # noqa: E402

from rmm_core import ReflectiveMemory  # noqa: E402

TOOLS = {"add", "search", "get", "update", "delete", "history", "profile"}


async def test_a_fact_added_is_found_by_the_next_search_with_its_fields(tmp_path):
    async with stdio_session(tmp_path / "m.sqlite") as s:
        assert {t.name for t in (await s.list_tools()).tools} == TOOLS
        [added] = (await call(s, "add", content="I adopted a beagle named Rex in May 2023.",
                              user_id="alice"))["added"]
        await call(s, "add", content="My sister Ana lives in Porto.", user_id="alice")
        found = await call(s, "search", query="what is my dog called?", user_id="alice", k=2)
    top = found["hits"][0]
    assert top["id"] == added["id"]
    assert "Rex" in top["text"]
    assert 0 < top["score"] <= 1
    assert top["rank"] == 1  # ranks count from 1
    assert top["memory_text"] == added["text"]
    assert top["refs"] == []
    for name in ("session_ids", "occurred_at", "created_at", "valid_from", "valid_to",
                 "current", "superseded_by", "supersedes", "conflicts", "metadata"):
        assert name in top, name
    assert top["current"] is True
    assert len(found["hits"]) == 2
    async with stdio_session(tmp_path / "m.sqlite") as s:
        short = await call(s, "search", query="what is my dog called?", user_id="alice",
                           max_words=12)
        default = await call(s, "search", query="what is my dog called?", user_id="alice")
    assert [h["id"] for h in short["hits"]] == [added["id"]]  # the next one does not fit
    assert [h["id"] for h in default["hits"]] == [h["id"] for h in found["hits"]]


async def test_a_changed_fact_supersedes_and_as_of_answers_the_past(tmp_path):
    async with stdio_session(tmp_path / "m.sqlite") as s:
        [old] = (await call(s, "add", content="The webinar is scheduled for March 20.",
                            user_id="di", occurred_at="2024-02-01"))["added"]
        [new] = (await call(s, "add", content="The webinar got rescheduled to March 27.",
                            user_id="di", occurred_at="2024-02-10"))["added"]
        now = (await call(s, "search", query="When is the webinar?", user_id="di",
                          k=2))["hits"]
        then = (await call(s, "search", query="When is the webinar?", user_id="di",
                           as_of="2024-02-05"))["hits"]
        bad = await refused(s, "search", query="webinar", user_id="di", as_of="soon")
    assert [h["id"] for h in now] == [new["id"], old["id"]]
    assert now[1]["current"] is False
    assert now[1]["superseded_by"] == new["id"]
    assert "(changed 10 February 2024 → " in now[1]["text"]
    assert [h["id"] for h in then] == [old["id"]]
    assert then[0]["current"] is True  # it held on 5 February, and its text says no change
    assert then[0]["valid_to"].startswith("2024-02-10")
    assert "InvalidInputError" in bad
    assert "as_of" in bad


async def test_a_hit_read_as_an_older_version_is_not_current(tmp_path):
    """No rule linked the two on write; the search reads the older one as a version, and its
    `current` says so beside its text's "(may have changed ...)"."""
    async with stdio_session(tmp_path / "m.sqlite", "--user", "ana") as s:
        await call(s, "add", content="I'm a barista at Blue Bottle downtown.",
                   occurred_at="2024-01-10")
        await call(s, "add", content="Three weeks into the bank job, I don't miss the coffee "
                   "shop rush at all.", occurred_at="2024-06-15")
        hits = (await call(s, "search", query="Where do I work?", k=2))["hits"]
    assert [h["current"] for h in hits] == [True, False]
    assert "(may have changed 15 June 2024" in hits[1]["text"]
    assert hits[1]["valid_to"] is None  # nothing was recorded on write


async def test_a_conversation_is_reflected_and_found_with_its_turns(tmp_path):
    messages = [{"role": "user", "content": "I just started learning the cello."},
                {"speaker": "Coach", "content": "Great, practise twenty minutes a day."},
                {"role": "human", "content": "My first recital is on 12 June.",
                 "timestamp": "2024-05-01T10:00:00+00:00"}]
    async with stdio_session(tmp_path / "m.sqlite") as s:
        added = (await call(s, "add", content=messages, user_id="bo", agent_id="tutor"))
        assert added["added"]
        assert all(m["metadata"] == {"agent_id": "tutor"}
                                      for m in added["added"])
        hits = (await call(s, "search", query="which instrument am I learning?",
                           user_id="bo", agent_id="tutor"))["hits"]
        assert "cello" in hits[0]["text"]
        assert hits[0]["refs"]
        assert hits[0]["session_ids"]
        other = await call(s, "search", query="cello", user_id="bo", agent_id="someone-else")
        assert other["hits"] == []
        assert (await call(s, "search", query="cello", user_id="bo",
                           filters={"agent_id": ["x", "tutor"]}))["hits"]


async def test_get_update_history_delete(tmp_path):
    async with stdio_session(tmp_path / "m.sqlite") as s:
        [m] = (await call(s, "add", content="I work at a bakery.", user_id="cy"))["added"]
        got = await call(s, "get", memory_id=m["id"], user_id="cy")
        assert got["text"] == "I work at a bakery."
        assert len(got["versions"]) == 1
        changed = await call(s, "update", memory_id=m["id"], text="I work at a library.",
                             user_id="cy", metadata={"topic": "work"})
        assert changed["text"] == "I work at a library."
        assert changed["metadata"] == \
            {"topic": "work"}
        versions = (await call(s, "history", memory_id=m["id"], user_id="cy"))["versions"]
        assert [v["text"] for v in versions] == ["I work at a bakery.", "I work at a library."]
        assert versions[-1]["reason"] == "update"
        hits = (await call(s, "search", query="where do I work", user_id="cy"))["hits"]
        assert hits[0]["memory_text"] == "I work at a library."
        assert await call(s, "delete", memory_id=m["id"], user_id="cy") == {"deleted": m["id"]}
        assert (await call(s, "search", query="where do I work", user_id="cy"))["hits"] == []
        assert "NotFoundError" in await refused(s, "get", memory_id=m["id"], user_id="cy")


async def test_profile_reads_the_working_context(tmp_path):
    db = tmp_path / "m.sqlite"
    with ReflectiveMemory.open(str(db)) as mem:
        working = mem.working_context(user_id="dee")
        working.core_memory_append("human", "Dee is vegetarian and lives in Oslo.")
        working.add_message({"role": "user", "content": "Book me a table for Friday."})
        mem.add("Dee's cat is called Miso.", user_id="dee")
    async with stdio_session(db) as s:
        profile = await call(s, "profile", user_id="dee")
        empty = await call(s, "profile", user_id="nobody")
    assert profile["blocks"]["human"] == "Dee is vegetarian and lives in Oslo."
    assert profile["messages"] == [{"speaker": "user", "text": "Book me a table for Friday."}]
    assert "vegetarian" in profile["context"]
    assert profile["memories"] == 1
    assert empty["blocks"]["human"] == ""
    assert empty["memories"] == 0


BAD_CALLS = [
    ("add", {"user_id": "u"}, "content"),
    ("add", {"content": "a fact"}, "user_id is required"),
    ("add", {"content": "   ", "user_id": "u"}, "InvalidInputError"),
    ("add", {"content": 42, "user_id": "u"}, "content"),
    ("add", {"content": [], "user_id": "u"}, "InvalidInputError"),
    ("add", {"content": [{"content": "hi"}], "user_id": "u"}, "either a role or a speaker"),
    ("add", {"content": [{"role": "pirate", "content": "arr"}], "user_id": "u"}, "role"),
    ("add", {"content": [{"role": "user", "text": "hi"}], "user_id": "u"}, "text"),
    ("add", {"content": "x", "user_id": "u", "metadata": {"": 1}}, "metadata keys"),
    ("add", {"content": "x", "user_id": "u", "agent_id": "a", "metadata": {"agent_id": "b"}},
     "disagrees"),
    ("search", {"user_id": "u"}, "query"),
    ("search", {"query": "x"}, "user_id is required"),
    ("search", {"query": "x", "user_id": "u", "k": 0}, "k must be a positive integer"),
    ("search", {"query": "x", "user_id": "u", "k": "many"}, "k"),
    ("search", {"query": "x", "user_id": "u", "max_words": 0}, "max_words must be a positive"),
    ("search", {"query": "x", "user_id": "u", "min_score": 2}, "min_score"),
    ("search", {"query": "x", "user_id": "u", "filters": {"k": {"a": 1}}}, "filter"),
    ("search", {"query": "x", "user_id": "u\x00"}, "user_id"),
    ("get", {"user_id": "u"}, "memory_id"),
    ("get", {"memory_id": "nope", "user_id": "u"}, "NotFoundError: no memory 'nope'"),
    ("update", {"memory_id": "nope", "user_id": "u"}, "text"),
    ("update", {"memory_id": "nope", "text": "t", "user_id": "u"}, "NotFoundError"),
    ("delete", {"memory_id": "nope", "user_id": "u"}, "NotFoundError"),
    ("delete", {"memory_id": "", "user_id": "u"}, "memory_id"),
    ("history", {"memory_id": "nope", "user_id": "u"}, "NotFoundError"),
    ("profile", {}, "user_id is required"),
    ("profile", {"user_id": 7}, "user_id"),
    ("forget", {"user_id": "u"}, "forget"),  # not offered without --allow-forget
]


async def test_bad_input_is_a_tool_error_and_the_server_goes_on(tmp_path):
    async with stdio_session(tmp_path / "m.sqlite") as s:
        await call(s, "add", content="I play chess on Sundays.", user_id="u")
        for tool, arguments, expected in BAD_CALLS:
            message = await refused(s, tool, **arguments)
            assert expected in message, (tool, arguments, message)
        assert (await call(s, "search", query="chess", user_id="u"))["hits"]


async def test_a_fixed_user_is_served_alone(tmp_path):
    async with stdio_session(tmp_path / "m.sqlite", "--user", "alice") as s:
        [m] = (await call(s, "add", content="I am allergic to peanuts."))["added"]
        assert m["user_id"] == "alice"
        assert (await call(s, "search", query="allergy", user_id="alice"))["hits"]
        for tool, arguments in [("search", {"query": "allergy"}), ("get", {"memory_id": m["id"]}),
                                ("delete", {"memory_id": m["id"]}), ("profile", {}),
                                ("add", {"content": "x"})]:
            message = await refused(s, tool, user_id="bob", **arguments)
            assert "AccessDenied: this server serves user 'alice' only, not 'bob'" in message
        assert (await call(s, "get", memory_id=m["id"]))["text"] == "I am allergic to peanuts."


async def test_a_fixed_agent_writes_and_searches_as_itself(tmp_path):
    db = tmp_path / "m.sqlite"
    with ReflectiveMemory.open(str(db)) as mem:
        mem.add("The deploy window is Tuesday 14:00.", user_id="gil", agent_id="coder")
    async with stdio_session(db, "--user", "gil", "--agent-id", "planner") as s:
        [m] = (await call(s, "add", content="The offsite is in Tallinn in June."))["added"]
        assert m["metadata"] == {"agent_id": "planner"}
        hits = (await call(s, "search", query="deploy window or offsite", k=5))["hits"]
        assert [h["id"] for h in hits] == [m["id"]]  # the coder's memory is not searched
        assert "AccessDenied: this server serves agent_id 'planner' only, not 'coder'" in \
            await refused(s, "search", query="deploy", agent_id="coder")
        assert "disagrees" in await refused(s, "search", query="deploy",
                                            filters={"agent_id": "coder"})


async def test_forget_is_offered_only_when_allowed(tmp_path):
    db = tmp_path / "m.sqlite"
    async with stdio_session(db) as s:
        await call(s, "add", content="I love sailing.", user_id="ed")
    async with stdio_session(db, "--allow-forget") as s:
        assert "forget" in {t.name for t in (await s.list_tools()).tools}
        assert "user_id is required" in await refused(s, "forget")
        assert await call(s, "forget", user_id="ed") == {"forgotten": True}
        assert (await call(s, "search", query="sailing", user_id="ed"))["hits"] == []


async def test_concurrent_calls_are_all_answered(tmp_path):
    async with stdio_session(tmp_path / "m.sqlite") as s:
        facts = [f"Fact number {n}: my locker code is {1000 + n}." for n in range(12)]
        added = await asyncio.gather(*(call(s, "add", content=f, user_id=f"u{n % 3}")
                                       for n, f in enumerate(facts)))
        assert all(len(a["added"]) == 1 for a in added)
        found = await asyncio.gather(*(call(s, "search", query=f"locker code {1000 + n}",
                                            user_id=f"u{n % 3}", k=4) for n in range(12)))
    for n, result in enumerate(found):
        assert all(h["user_id"] == f"u{n % 3}" for h in result["hits"])
        assert any(f"{1000 + n}." in h["text"] for h in result["hits"]), n


async def test_a_killed_server_loses_no_acknowledged_add(tmp_path):
    db, pid_file = tmp_path / "m.sqlite", tmp_path / "pid"
    conversation = [{"role": "user", "content": "My passport number ends in 4471."},
                    {"role": "assistant", "content": "Noted."}]
    with pytest.raises(BaseException):  # noqa: B017, PT011 - the client sees its server die
        async with stdio_session(db, pid_file=pid_file) as s:
            [fact] = (await call(s, "add", content="The spare key is under the blue pot.",
                                 user_id="fay"))["added"]
            reflected = (await call(s, "add", content=conversation, user_id="fay"))["added"]
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
            await s.call_tool("search", {"query": "key", "user_id": "fay"})
    with ReflectiveMemory.open(str(db)) as mem:
        assert mem.get(fact["id"], user_id="fay").text == fact["text"]
        assert {m.id for m in mem.memories(user_id="fay")} == \
            {fact["id"], *(m["id"] for m in reflected)}
        assert mem.search("where is the spare key", user_id="fay")[0].memory.id == fact["id"]
        assert "4471" in mem.search("passport number", user_id="fay")[0].text


ODD_VALUES = [None, 0, -1, 10**30, 1e308, True, "", " ", "\x00", "x" * 200_000,
              [], [None], {}, {"": None}, [{"role": "user"}], {"nested": {"deep": [1, {}]}}]
ARGUMENTS = {"add": ["content", "user_id", "agent_id", "metadata"],
             "search": ["query", "user_id", "k", "max_words", "filters", "min_score"],
             "get": ["memory_id", "user_id"], "update": ["memory_id", "text", "metadata"],
             "delete": ["memory_id"], "history": ["memory_id"], "profile": ["user_id"]}


async def test_odd_values_in_every_argument_never_take_the_server_down(tmp_path):
    """Each tool, each argument, each odd value: an answer or a tool error, and the server
    answers the next call as before."""
    async with stdio_session(tmp_path / "m.sqlite", "--user", "u") as s:
        [m] = (await call(s, "add", content="I collect vinyl records."))["added"]
        valid = {"content": "a fact", "query": "vinyl", "memory_id": m["id"], "text": "new"}
        errors = 0
        for tool, names in ARGUMENTS.items():
            for name in names:
                for value in ODD_VALUES:
                    arguments = {n: valid[n] for n in ARGUMENTS[tool] if n in valid}
                    result = await s.call_tool(tool, {**arguments, name: value})
                    errors += is_error(result)
                    if tool == "update" and not is_error(result):  # keep the memory's text
                        await call(s, "update", memory_id=m["id"], text=m["text"])
        assert errors > len(ODD_VALUES) * 10  # most odd values are refused
        hits = (await call(s, "search", query="what do I collect?"))["hits"]
        assert any(h["id"] == m["id"] for h in hits)
