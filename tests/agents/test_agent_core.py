"""Agent memory in the core: facts added directly, get/update/delete/history of one memory,
metadata with filters and agent/run scopes, messages in every common form.

Real parts throughout: a SQLite file (PostgreSQL too for the tests marked `backends`) and
the real packaged embedder; no LLM (the LLM-free pipeline). The reflection tests count the
real reflector's calls by user and thread (`_Reflections` wraps it), so they need no timing.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from backends import run_sql

from rmm_core import InvalidInputError, NotFoundError, ReflectiveMemory, Turn
from rmm_core.ops.transfer import export_records, import_records
from rmm_core.storage import open_store
from rmm_core.storage.base import SCHEMA_VERSION


def _texts(result) -> list[str]:
    return [hit.memory.text for hit in result]


# add --------------------------------------------------------------------------------------
@pytest.mark.backends
def test_a_fact_is_a_memory_at_once_with_direct_provenance(open_memory):
    mem = open_memory()
    [fact] = mem.add("I am allergic to peanuts.", user_id="u", metadata={"kind": "health"})
    assert fact.text == "I am allergic to peanuts."
    assert fact.refs == []
    assert fact.metadata == {"kind": "health"}
    assert [(v.version, v.reason, v.source) for v in fact.versions] == [(1, "created", "direct")]
    assert mem.turns(user_id="u") == []  # no turn logged, nothing left to reflect
    hits = mem.search("Which food allergy do I have?", user_id="u")
    assert hits[0].memory.id == fact.id
    assert "[" in hits[0].text
    mem.close()
    reopened = open_memory()
    assert reopened.get(fact.id, user_id="u").metadata == {"kind": "health"}


def test_a_long_fact_becomes_passages_that_fit_a_hit(open_memory):
    mem = open_memory(search={"max_hit_words": 30})
    text = " ".join(f"Sentence number {i} is about my garden and its roses." for i in range(12))
    added = mem.add(text, user_id="u")
    assert len(added) > 1
    assert all(len(m.text.split()) <= 27 for m in added)
    assert " ".join(m.text for m in added).split() == text.split()


def test_messages_in_every_common_form_are_one_session(open_memory):
    mem = open_memory()
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "My sister Mia moved to Lisbon last spring."},
        {"role": "assistant", "content": [{"type": "text", "text": "Lisbon is lovely."}]},
        ("human", "She works at an aquarium there."),
        ("ai", "What a fun job!"),
        {"speaker": "user", "text": "She feeds the otters."},
        Turn("assistant", "Otters are great."),
    ]
    added = mem.add(messages, user_id="u", agent_id="helper")
    turns = mem.turns(user_id="u")
    assert [t.speaker for t in turns] == ["system", "user", "assistant", "user", "assistant",
                                          "user", "assistant"]
    assert turns[2].text == "Lisbon is lovely."
    assert added
    assert all(m.metadata == {"agent_id": "helper"} for m in added)
    assert mem.search("Where does Mia work?", user_id="u", agent_id="helper")
    # the same forms go through append
    mem.append(("user", "I play the cello."), user_id="u", session_id="s2")
    assert mem.turns(user_id="u", session_id="s2")[0].speaker == "user"


@pytest.mark.parametrize("bad", [
    {"role": "wizard", "content": "hi"},
    {"role": "user"},
    {"role": "user", "content": "hi", "extra": 1},
    ("user", "hi", "again"),
    ("user", 3),
    {"role": "user", "content": [{"type": "text", "text": 5}]},
])
def test_malformed_messages_are_refused_and_nothing_is_written(open_memory, bad):
    mem = open_memory()
    with pytest.raises(InvalidInputError):
        mem.add([("user", "fine"), bad], user_id="u")
    assert mem.turns(user_id="u") == []
    assert mem.memories(user_id="u") == []


# get / update / delete / history ------------------------------------------------------------
@pytest.mark.backends
def test_update_is_a_new_version_and_search_sees_the_new_text(open_memory):
    mem = open_memory()
    [fact] = mem.add("My favourite colour is green.", user_id="u", agent_id="a")
    mem.add("I drive a red bicycle to work.", user_id="u")
    updated = mem.update(fact.id, "My favourite colour is purple.", user_id="u",
                         metadata={"checked": True})
    assert updated.text == "My favourite colour is purple."
    assert updated.metadata == {"agent_id": "a", "checked": True}
    history = mem.history(fact.id, user_id="u")
    assert [(v.version, v.reason, v.text) for v in history] == [
        (1, "created", "My favourite colour is green."),
        (2, "update", "My favourite colour is purple.")]
    top = mem.search("purple", user_id="u", k=1)[0]
    assert top.memory.id == fact.id
    assert "purple" in top.text
    assert mem.search("colour", user_id="u", filters={"checked": True})[0].memory.id == fact.id


@pytest.mark.backends
def test_delete_removes_the_memory_its_history_and_its_hits(open_memory):
    mem = open_memory()
    [fact] = mem.add("My locker code is 4711.", user_id="u")
    [other] = mem.add("I swim on Tuesdays.", user_id="u")
    mem.delete(fact.id, user_id="u")
    assert [m.id for m in mem.memories(user_id="u")] == [other.id]
    assert fact.id not in [h.memory.id for h in mem.search("locker code", user_id="u")]
    for call in (mem.get, mem.history, mem.delete):
        with pytest.raises(NotFoundError):
            call(fact.id, user_id="u")
    with pytest.raises(NotFoundError):
        mem.update(fact.id, "new text", user_id="u")
    if not mem.store.url.startswith("postgresql"):
        with sqlite3.connect(mem.store.path) as db:
            assert not db.execute("SELECT COUNT(*) FROM memory_versions WHERE memory_id = ?",
                                  (fact.id,)).fetchone()[0]


def test_one_users_memory_is_not_found_for_another(open_memory):
    mem = open_memory()
    [fact] = mem.add("I keep bees.", user_id="alice")
    for call in (mem.get, mem.history, mem.delete):
        with pytest.raises(NotFoundError):
            call(fact.id, user_id="bob")
    with pytest.raises(NotFoundError):
        mem.update(fact.id, "bob was here", user_id="bob")
    assert mem.get(fact.id, user_id="alice").text == "I keep bees."


def test_a_reflected_memory_can_be_updated_and_keeps_its_refs(open_memory):
    mem = open_memory()
    [memory] = mem.add_session([Turn("user", "I adopted a grey cat named Pixel.", "t1")],
                               user_id="u")
    updated = mem.update(memory.id, "I adopted a grey cat named Pixel in March.", user_id="u")
    assert updated.refs == ["t1"]
    assert [v.reason for v in updated.versions] == ["created", "update"]


# metadata, filters and scopes ----------------------------------------------------------------
@pytest.mark.backends
def test_filters_and_scopes_narrow_search(open_memory):
    mem = open_memory()
    mem.add("The launch checklist lives in the blue binder.", user_id="u", agent_id="ops",
            run_id="r1", metadata={"priority": 1, "urgent": True})
    mem.add("The launch party is on Friday evening.", user_id="u", agent_id="social",
            metadata={"priority": 2, "urgent": False})
    mem.add("The launch budget is 40,000 euros.", user_id="u", metadata={"priority": 1.0})

    assert len(mem.search("launch", user_id="u")) == 3
    assert _texts(mem.search("launch", user_id="u", agent_id="ops")) == [
        "The launch checklist lives in the blue binder."]
    assert _texts(mem.search("launch", user_id="u", agent_id="ops", run_id="r2")) == []
    assert len(mem.search("launch", user_id="u", filters={"priority": 1})) == 2  # 1 == 1.0
    assert len(mem.search("launch", user_id="u", filters={"agent_id": ["ops", "social"]})) == 2
    assert _texts(mem.search("launch", user_id="u", filters={"urgent": True})) == [
        "The launch checklist lives in the blue binder."]
    assert len(mem.search("launch", user_id="u", filters={"urgent": 1})) == 0  # bool is not 1
    assert len(mem.search("launch", user_id="u", filters={"missing": "x"})) == 0


@pytest.mark.parametrize("kw", [
    {"filters": {"k": {"nested": 1}}}, {"filters": {"k": []}}, {"filters": {"k": float("nan")}},
    {"filters": ["k"]}, {"filters": {3: "x"}}, {"agent_id": 7},
    {"agent_id": "a", "filters": {"agent_id": "b"}},
])
def test_bad_filters_are_refused(open_memory, kw):
    mem = open_memory()
    mem.add("something", user_id="u")
    with pytest.raises(InvalidInputError):
        mem.search("something", user_id="u", **kw)


@pytest.mark.parametrize("kw", [
    {"metadata": "label"}, {"metadata": {"x": float("inf")}}, {"metadata": {"x": object()}},
    {"metadata": {"x": "\ud800"}}, {"run_id": ""}, {"agent_id": "a", "metadata": {"agent_id": "b"}},
])
def test_bad_metadata_is_refused_and_nothing_is_written(open_memory, kw):
    mem = open_memory()
    with pytest.raises(InvalidInputError):
        mem.add("a fact", user_id="u", **kw)
    with pytest.raises(InvalidInputError):
        mem.add([("user", "a message")], user_id="u", **kw)
    assert mem.memories(user_id="u") == []
    assert mem.turns(user_id="u") == []


def test_a_session_keeps_its_metadata(open_memory):
    mem = open_memory()
    mem.append(("user", "hello"), user_id="u", session_id="s", agent_id="a")
    mem.append(("user", "again"), user_id="u", session_id="s")  # none given: the session's
    with pytest.raises(InvalidInputError):
        mem.append(("user", "hi"), user_id="u", session_id="s", agent_id="b")
    assert len(mem.turns(user_id="u")) == 2
    memories = mem.end_session(user_id="u", session_id="s")
    assert memories
    assert all(m.metadata == {"agent_id": "a"} for m in memories)


def test_reflection_does_not_merge_across_scopes(open_memory):
    mem = open_memory()
    text = [("user", "I water the tomato plants every morning before breakfast.")]
    [a] = mem.add(text, user_id="u", agent_id="a")
    [b] = mem.add(text, user_id="u", agent_id="b")
    assert mem.add(text, user_id="u", agent_id="a") == []  # the same add again: a no-op
    [a2] = mem.add(text, user_id="u", agent_id="a", occurred_at="2024-05-01")  # said again
    assert a.id != b.id
    assert a2.id == a.id
    assert mem.get(b.id, user_id="u").metadata == {"agent_id": "b"}


@pytest.mark.backends
def test_metadata_survives_export_and_import(open_memory, tmp_path):
    mem = open_memory()
    mem.add("I speak Portuguese.", user_id="u", agent_id="tutor")
    mem.append(("user", "Let us practise verbs."), user_id="u", session_id="open",
               run_id="r9")
    records = list(export_records(mem.store, "u"))
    other = ReflectiveMemory.open(str(tmp_path / "copy.sqlite"), embedder=mem.embedder)
    import_records(other.store, records)
    assert [m.metadata for m in other.memories(user_id="u")] == [{"agent_id": "tutor"}]
    assert other.store.session("u", "open").metadata == {"run_id": "r9"}
    assert other.search("language", user_id="u", agent_id="tutor")
    other.close()


# schema -------------------------------------------------------------------------------------
@pytest.mark.backends
def test_schema_4_stores_gain_metadata_columns(store_target, embedder):
    mem = ReflectiveMemory.open(store_target, embedder=embedder)
    mem.add_session([Turn("user", "I collect vinyl records.", "t1")], user_id="u",
                    session_id="s")
    mem.close()
    _downgrade_to_schema_4(store_target)
    mem = ReflectiveMemory.open(store_target, embedder=embedder)
    [memory] = mem.memories(user_id="u")
    assert memory.metadata == {}
    assert mem.store.session("u", "s").metadata == {}
    mem.add("I collect stamps too.", user_id="u", agent_id="a")
    assert _texts(mem.search("collect", user_id="u", agent_id="a")) == ["I collect stamps too."]
    mem.close()
    store = open_store(store_target)
    assert SCHEMA_VERSION >= 5
    store.close()


def _downgrade_to_schema_4(target: str) -> None:
    """The tables as schema 4 had them: no metadata on sessions and memories."""
    drop = ["ALTER TABLE sessions DROP COLUMN metadata",
            "ALTER TABLE memories DROP COLUMN metadata",
            "UPDATE meta SET value = '4' WHERE key = 'schema_version'"]
    run_sql(target, drop)


# immediate recall ----------------------------------------------------------------------------
CHAT = [
    ("user", "I started learning the cello in January."),
    ("assistant", "That is a beautiful instrument."),
    ("user", "My teacher is called Ingrid and she lives in Bergen."),
    ("assistant", "Bergen is a lovely city."),
]


@pytest.mark.backends
def test_a_fact_said_one_turn_earlier_is_found_without_end_session(open_memory):
    mem = open_memory()
    mem.append(CHAT, user_id="u", session_id="thread-1")
    assert mem.memories(user_id="u") == []
    hits = mem.search("What is my teacher called?", user_id="u", k=3)
    top = hits[0]
    assert top.memory.id == "turn:thread-1:3"
    assert top.refs == ["thread-1:3"]
    assert top.memory.attrs == {"provisional": True}
    assert top.text == "user: My teacher is called Ingrid and she lives in Bergen."
    assert len({h.memory.id for h in hits}) == len(hits)
    # a message logged before it is searched for does not find itself
    mem.append(("user", "Where does Ingrid live?"), user_id="u", session_id="thread-1")
    hits = mem.search("Where does Ingrid live?", user_id="u", k=3)
    assert hits[0].memory.id == "turn:thread-1:3"
    assert "turn:thread-1:5" not in [h.memory.id for h in hits]


def test_reflection_replaces_provisional_hits_with_no_duplicates(open_memory):
    mem = open_memory()
    mem.append(CHAT, user_id="u", session_id="t")
    mem.end_session(user_id="u", session_id="t")
    hits = mem.search("Who teaches me the cello?", user_id="u", k=5)
    assert hits
    assert not any(h.memory.attrs.get("provisional") for h in hits)
    refs = [r for h in hits for r in h.refs]
    assert len(refs) == len(set(refs))
    mem.append(("user", "Ingrid also teaches piano."), user_id="u", session_id="t")
    hits = mem.search("Ingrid", user_id="u", k=5)
    assert [h.memory.id for h in hits if h.memory.attrs.get("provisional")] == ["turn:t:5"]
    refs = [r for h in hits for r in h.refs]
    assert len(refs) == len(set(refs))


def test_provisional_hits_rank_among_memories(open_memory):
    mem = open_memory()
    topics = ["I repaired the roof of my garage after the storm.",
              "My daughter scored two goals in her football match.",
              "We are planning a road trip through Scotland in May.",
              "I bake sourdough bread every Sunday morning.",
              "The quarterly report is due at the end of the month."]
    for i, text in enumerate(topics):
        mem.add_session([("user", text), ("assistant", "Tell me more.")], user_id="u",
                        session_id=f"old{i}")
    mem.append(CHAT, user_id="u", session_id="new")
    assert mem.search("What is my teacher called?", user_id="u")[0].memory.id == "turn:new:3"
    top = mem.search("When is the road trip through Scotland?", user_id="u")[0]
    assert "Scotland" in top.text
    assert not top.memory.attrs.get("provisional")


def test_a_long_open_turn_is_found_by_its_passage_within_the_hit_budget(open_memory):
    mem = open_memory(search={"max_hit_words": 40})
    filler = " ".join(f"Paragraph {i} talks about weather, trains and coffee." for i in range(20))
    mem.append([("assistant", f"{filler} Your dentist appointment is on the 14th of June. "
                             f"{filler}")], user_id="u", session_id="s")
    hit = mem.search("When is my dentist appointment?", user_id="u")[0]
    assert "dentist" in hit.text
    assert hit.refs == ["s:1"]
    assert len(hit.text.split()) <= 40


def test_provisional_hits_follow_filters_and_can_be_turned_off(open_memory):
    mem = open_memory()
    mem.append(CHAT, user_id="u", session_id="t", agent_id="tutor")
    assert mem.search("cello teacher", user_id="u", agent_id="tutor")
    assert not mem.search("cello teacher", user_id="u", agent_id="chef")
    assert not mem.search("cello teacher", user_id="bob")
    mem.close()
    assert not open_memory(search={"immediate_recall": False}).search("cello teacher", user_id="u")


# reflection off the request path ---------------------------------------------------------------
class _Reflections:
    """Counts the reflections a memory runs, by user and by thread."""

    def __init__(self, mem: ReflectiveMemory) -> None:
        self.calls: list[tuple[str, str]] = []
        inner = mem._ingest.reflector.reflect

        def reflect(state):
            self.calls.append((state.user_id, threading.current_thread().name))
            return inner(state)

        mem._ingest.reflector.reflect = reflect

    def threads(self, user_id: str) -> list[str]:
        return [thread for user, thread in self.calls if user == user_id]


def _idle_session(mem: ReflectiveMemory, user_id: str, session_id: str) -> None:
    """A session whose last turn came two idle timeouts ago."""
    mem.store.append_turns(user_id, session_id, [Turn("user", f"{user_id} likes tea.")], None,
                           time.time() - 2 * mem.config.sessions.idle_timeout)


def test_a_request_never_reflects_another_users_session(open_memory):
    mem = open_memory()
    spy = _Reflections(mem)
    _idle_session(mem, "victim", "v")
    _idle_session(mem, "caller", "old")
    mem.append(("user", "hello"), user_id="caller", session_id="new")
    assert spy.threads("victim") == []  # waits for the worker or reflect_pending
    assert spy.threads("caller") == ["MainThread"]  # the caller's own idle session
    assert mem.memories(user_id="victim") == []
    mem.reflect_pending()
    assert spy.threads("victim") == ["MainThread"]
    assert mem.memories(user_id="victim")


def test_the_background_worker_reflects_off_the_request_path(open_memory):
    mem = open_memory(sessions={"background_reflection": True, "reflection_interval": 0.05})
    spy = _Reflections(mem)
    _idle_session(mem, "victim", "v")
    _idle_session(mem, "caller", "old")
    mem.append(("user", "My bike is green."), user_id="caller", session_id="new")
    mem.end_session(user_id="caller", session_id="new", wait=False)
    _wait_for(lambda: len(mem.memories(user_id="victim")) and
              len(mem.memories(user_id="caller")) >= 2)
    assert spy.calls
    assert {thread for _, thread in spy.calls} == {"rmm-reflection"}
    worker = mem._ingest.worker
    assert worker.alive
    mem.close()
    assert not worker.alive


def test_open_leaves_crash_recovery_to_the_worker(store_target, embedder):
    mem = ReflectiveMemory.open(store_target, embedder=embedder)
    mem.append(("user", "I left the oven on."), user_id="u", session_id="s")
    mem.store.mark_ended("u", "s")  # as a crash after end_session's mark would leave it
    mem.close()
    mem = ReflectiveMemory.open(store_target, embedder=embedder,
                                sessions={"background_reflection": True,
                                          "reflection_interval": 0.05})
    _wait_for(lambda: mem.memories(user_id="u"))
    mem.close()


def _wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the worker did not get there"
        time.sleep(0.02)


def test_the_callers_own_conversation_and_repeats_are_not_provisional_hits(open_memory):
    mem = open_memory()
    mem.append(CHAT, user_id="u", session_id="current")
    mem.append([("user", "What is my teacher called?"), ("user", "what is my  teacher called?")],
               user_id="u", session_id="other")
    ids = [h.memory.id for h in mem.search("Who teaches me?", user_id="u", k=5)]
    assert "turn:current:3" in ids
    assert len([i for i in ids if i.startswith("turn:other")]) == 1
    ids = [h.memory.id for h in mem.search("Who teaches me?", user_id="u", k=5,
                                           session_id="current")]
    assert ids == ["turn:other:1"]


def test_bm25_of_texts_outside_the_bank_is_bm25s_own_score():
    """Provisional turns are scored as if in the bank: for the bank's own texts the result
    must be exactly what bm25s gives them."""
    from collections import Counter

    from rmm_core.language.tokens import tokenize
    from rmm_core.read.index import Corpus, bm25_index

    docs = tokenize(["my sister breeds greyhounds near Lisbon", "greyhounds are fast dogs",
                     "I repair motorbikes", "my sister and my brother visit Lisbon often"])
    query = tokenize(["sister greyhounds Lisbon"])[0]
    expected = bm25_index(docs).get_scores(query)
    got = Corpus.of(docs).scores(query, [Counter(d) for d in docs])
    assert got == pytest.approx(expected, rel=1e-5)
