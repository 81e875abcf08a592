"""Bad input at every public entry point, on every backend, and property tests of the parsers.

Memory-level tests use the deterministic `HashEmbedder`; the parsers are pure functions fed
arbitrary or JSON-shaped LLM answers by hypothesis. The contract suite (test_core.py) has
the basic cases; this file covers the reliability side: sizes, ids, reuse, garbage.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmm_core import InvalidInputError, ReflectiveMemory, StorageError, Turn
from rmm_core.models.embed import HashEmbedder
from rmm_core.models.parse import ParseError, parse_yes_no
from rmm_core.write.extract import parse_topics
from rmm_core.write.reconcile import parse_actions
from rmm_core.write.segment import parse_segments

pytestmark = pytest.mark.backends


@pytest.fixture
def mem(store_target):
    m = ReflectiveMemory.open(store_target, embedder=HashEmbedder(),
                              sessions={"idle_timeout": None})
    yield m
    m.close()


WRONG_TYPES = [None, 3, 3.5, b"bytes", ["list"], {"a": 1}, object()]


@pytest.mark.parametrize("bad", WRONG_TYPES + ["", "   ", "nul\x00inside", "x" * 513])
def test_bad_ids_are_rejected_everywhere_and_write_nothing(mem, bad):
    calls = [lambda: mem.append(Turn("a", "hi"), user_id=bad, session_id="s"),
             lambda: mem.append(Turn("a", "hi"), user_id="u", session_id=bad),
             lambda: mem.add_session([Turn("a", "hi")], user_id=bad),
             lambda: mem.end_session(user_id=bad, session_id="s"),
             lambda: mem.search("q", user_id=bad),
             lambda: mem.turns(user_id=bad),
             lambda: mem.memories(user_id=bad),
             lambda: mem.forget(user_id=bad),
             lambda: mem.append(Turn("a", "hi", id=bad), user_id="u", session_id="s")]
    for call in calls[:-1] if bad is None else calls:  # a None turn id means "generate one"
        with pytest.raises(InvalidInputError):
            call()
    assert mem.store.users() == []


@pytest.mark.parametrize("bad", [Turn("a", "hi", timestamp=None).__class__("", "x"),
                                 {"speaker": "a", "text": "\t\n \r"},
                                 {"speaker": "a\x00b", "text": "hi"},
                                 {"speaker": "a", "text": "hi", "timestamp": object()},
                                 {"speaker": "a", "text": "x" * 4_000_001},
                                 ("speaker", "text")])
def test_bad_turns_leave_the_batch_unwritten(mem, bad):
    with pytest.raises(InvalidInputError):
        mem.append([Turn("a", "fine"), bad], user_id="u", session_id="s")
    assert mem.turns(user_id="u") == []


def test_bad_search_arguments(mem):
    mem.add_session([Turn("a", "hello world")], user_id="u")
    for query, k in ((None, 5), (b"q", 5), ("q", 0), ("q", -1), ("q", 2.0), ("q", True)):
        with pytest.raises(InvalidInputError):
            mem.search(query, user_id="u", k=k)
    assert len(mem.search("\x00\x01\x02 hello", user_id="u")) == 1


def test_duplicate_turn_ids_unknown_sessions_and_reused_session_ids(mem):
    with pytest.raises(InvalidInputError, match="duplicate"):
        mem.append([Turn("a", "one", id="t"), Turn("b", "two", id="t")], user_id="u",
                   session_id="s")
    mem.add_session([Turn("a", "first visit", id="t1")], user_id="u", session_id="s")
    with pytest.raises(InvalidInputError, match="already exists"):
        mem.append(Turn("a", "again", id="t1"), user_id="u", session_id="s2")
    with pytest.raises(InvalidInputError, match="no session"):
        mem.end_session(user_id="u", session_id="never")
    # a reused session id continues that session: new turns are logged and reflected
    added = mem.add_session([Turn("a", "second visit", id="t2")], user_id="u", session_id="s")
    assert [t.id for t in mem.turns(user_id="u", session_id="s")] == ["t1", "t2"]
    assert [r for m in added for r in m.refs] == ["t2"]
    assert sorted(r for m in mem.memories(user_id="u") for r in m.refs) == ["t1", "t2"]


def test_control_characters_round_trip(mem):
    """(The 1 MB turn is in test_core.py, run on both backends when marked `backends`.)"""
    text = "".join(chr(c) for c in range(32)) + " mixed with words \ue000 \u2028 \U0001f600"
    mem.add_session([Turn("a", text), Turn("b", "plain")], user_id="u", session_id="s")
    log = mem.turns(user_id="u")
    assert log[0].text == text
    assert text in "".join(m.text for m in mem.memories(user_id="u"))


def test_a_ten_thousand_turn_session(mem):
    turns = [Turn("a" if i % 2 else "b", f"turn {i} about item {i % 37}") for i in range(10_000)]
    mem.append(turns, user_id="u", session_id="big")
    assert len(mem.turns(user_id="u")) == 10_000
    mem.end_session(user_id="u", session_id="big")
    refs = [r for m in mem.memories(user_id="u") for r in m.refs]
    assert len(refs) == len(set(refs)) == 10_000


@pytest.mark.parametrize("store_target", ["sqlite"], indirect=True)
def test_garbage_files_and_missing_folders(tmp_path, store_target):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(bytes(range(256)) * 64)
    for target in (str(garbage), str(tmp_path / "missing" / "x.db")):
        with pytest.raises(StorageError):
            ReflectiveMemory.open(target, embedder=HashEmbedder())
    for target in ("", "   ", "mysql://h/db", 42):
        with pytest.raises(InvalidInputError):
            ReflectiveMemory.open(target, embedder=HashEmbedder())


@pytest.mark.parametrize("store_target", ["sqlite"], indirect=True)
def test_unreachable_postgres(store_target):
    with pytest.raises(StorageError, match="cannot reach PostgreSQL"):
        ReflectiveMemory.open("postgresql://u:pw@127.0.0.1:1/db?connect_timeout=2",
                              embedder=HashEmbedder())


# property tests of the store through the front door ------------------------------------------
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
               max_size=120).filter(str.strip)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXT, min_size=1, max_size=6), user=st.text(min_size=1, max_size=20))
def test_store_property_every_accepted_turn_is_kept_and_reflected_once(mem, texts, user):
    try:
        stored = mem.add_session([Turn("a", t) for t in texts], user_id=user)
    except InvalidInputError:
        assert not user.strip() or "\x00" in user
        return
    log = [t for t in mem.turns(user_id=user) if t.id in {r for m in stored for r in m.refs}]
    assert [t.text for t in log][-len(texts):] == texts
    refs = [r for m in mem.memories(user_id=user) for r in m.refs]
    assert len(refs) == len(set(refs)) == len(mem.turns(user_id=user))
    mem.forget(user_id=user)
    assert mem.turns(user_id=user) == []
    assert mem.memories(user_id=user) == []


# property tests of the LLM-output parsers ----------------------------------------------------
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 40) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                              max_size=4), max_leaves=12)
ANSWERS = (st.text() | JSONISH.map(json.dumps)
           | JSONISH.map(lambda v: f"Sure!\n```json\n{json.dumps(v)}\n```")
           | JSONISH.map(lambda v: json.dumps(v)[: max(1, len(json.dumps(v)) // 2)]))


@settings(max_examples=300, deadline=None)
@given(answer=ANSWERS | st.fixed_dictionaries({"Ann": JSONISH, "Bob": JSONISH}).map(json.dumps),
       n=st.integers(1, 30))
def test_parse_topics_returns_valid_topics_or_parse_error(answer, n):
    try:
        topics = parse_topics(answer, ["Ann", "Bob"], n)
    except ParseError:
        return
    for speaker, summary, positions in topics:
        assert speaker in ("Ann", "Bob")
        assert summary.strip()
        assert all(isinstance(p, int) and 0 <= p < n for p in positions)


@settings(max_examples=300, deadline=None)
@given(answer=ANSWERS | st.lists(st.tuples(st.integers(-2, 6), st.sampled_from(
    ["Add()", "Merge({}, merged text)", "Merge({},", "merge({}, x)", "Update({}, new text)",
     "update({},"]), st.integers(-2, 6)),
    max_size=5).map(lambda rows: "\n".join(f"N{a}: {b.format(c)}" for a, b, c in rows)),
       n_new=st.integers(1, 5), n_stored=st.integers(0, 5))
def test_parse_actions_returns_in_range_actions_or_parse_error(answer, n_new, n_stored):
    try:
        actions = parse_actions(answer, n_new, n_stored)
    except ParseError:
        return
    assert actions
    assert all(0 <= k < n_new for k in actions)
    for value in actions.values():
        assert value is None or (value.kind in ("merge", "update")
                                 and 0 <= value.stored < n_stored and value.text.strip())


@settings(max_examples=300, deadline=None)
@given(answer=ANSWERS, n=st.integers(1, 25))
def test_parse_segments_cover_each_turn_once_or_parse_error(answer, n):
    try:
        segments = parse_segments(answer, n)
    except ParseError:
        return
    assert [i for seg in segments for i in seg] == list(range(n))
    assert all(seg for seg in segments)


@settings(max_examples=200, deadline=None)
@given(answer=st.text() | st.sampled_from(["Yes.", "no", "**YES**", "Nope", "yes-ish"]))
def test_parse_yes_no_is_a_bool_or_parse_error(answer):
    try:
        value = parse_yes_no(answer)
    except ParseError:
        return
    assert isinstance(value, bool)
    assert not math.isnan(float(value))


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:00-14:00",
                                  "0050-06-01", "9950-01-01T00:00:00Z"])
def test_a_time_at_the_ends_of_the_calendar_is_refused_at_the_door(mem, when):
    """"Yesterday" said on 1 January of year 1 at +14:00 (year 0 in UTC) raised a raw
    OverflowError on write, and a conversation logged with such a time failed reflection."""
    said = "Yesterday I ran ten kilometres."
    calls = [lambda: mem.add(said, user_id="u", occurred_at=when),
             lambda: mem.add([{"role": "user", "content": said, "timestamp": when}],
                             user_id="u"),
             lambda: mem.add_session([("user", said)], user_id="u", started_at=when),
             lambda: mem.append({"speaker": "user", "text": said, "timestamp": when},
                                user_id="u", session_id="s"),
             lambda: mem.search("When did I run?", user_id="u", as_of=when)]
    for call in calls:
        with pytest.raises(InvalidInputError, match="outside the years 100-9899"):
            call()
    assert mem.turns(user_id="u") == []
    assert mem.memories(user_id="u") == []


def test_the_first_and_last_years_accepted_ground_relative_times(mem):
    [first] = mem.add("Yesterday I ran.", user_id="u", occurred_at="0100-01-02T00:00:00+14:00")
    [last] = mem.add("Tomorrow I run.", user_id="u", occurred_at="9899-12-30T00:00:00-14:00")
    assert "Yesterday (1 January 100)" in first.text
    assert "Tomorrow (31 December 9899)" in last.text
