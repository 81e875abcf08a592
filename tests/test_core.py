"""The public contract of rmm_core on the embedded SQLite store, with the real embedder."""

from __future__ import annotations

import sqlite3
from datetime import datetime

import pytest
from pydantic import ValidationError

from rmm_core import (
    InvalidInputError,
    Memory,
    MemoryHit,
    ReflectiveMemory,
    SearchResult,
    StorageError,
    Turn,
)
from rmm_core.errors import ReflectionError

PAINTING = [
    Turn("Melanie", "I painted a sunrise over the lake last weekend with my kids.", id="s1:1"),
    Turn("Caroline", "That sounds beautiful! Do you paint often?", id="s1:2"),
    Turn("Melanie", "Every Sunday. Painting is how I relax after work at the hospital.",
         id="s1:3"),
]
ADOPTION = [
    Turn("Caroline", "I have decided to adopt a child as a single parent.", id="s2:1"),
    Turn("Melanie", "Wow, that is a huge step. Which agency are you using?", id="s2:2"),
    Turn("Caroline", "An LGBTQ-friendly agency downtown; the interview is in June.", id="s2:3"),
    Turn("Melanie", "They will love you. Tell me how the interview goes!", id="s2:4"),
]


def test_add_session_and_search_returns_hits_with_text_and_refs(open_memory):
    mem = open_memory()
    created = mem.add_session(PAINTING, user_id="u1", started_at=datetime(2023, 5, 8))
    assert created
    assert all(isinstance(m, Memory) for m in created)
    mem.add_session(ADOPTION, user_id="u1", started_at="2023-06-01")
    res = mem.search("Which agency is Caroline using to adopt?", user_id="u1", k=1)
    assert isinstance(res, SearchResult)
    assert len(res) == 1
    hit = res[0]
    assert isinstance(hit, MemoryHit)
    assert set(hit.refs) <= {"s2:1", "s2:2", "s2:3", "s2:4"}
    assert "s2:3" in hit.refs
    assert "LGBTQ-friendly agency" in hit.text
    assert hit.text.startswith("[1 June 2023]")
    assert hit.memory.id in {m.id for m in mem.memories(user_id="u1")}


def test_refs_are_the_callers_turn_ids_and_cover_every_turn(open_memory):
    mem = open_memory()
    mem.add_session(PAINTING + ADOPTION[:0], user_id="u1")
    refs = [r for m in mem.memories(user_id="u1") for r in m.refs]
    assert sorted(refs) == ["s1:1", "s1:2", "s1:3"]


def test_dict_turns_and_generated_ids(open_memory):
    mem = open_memory()
    mem.add_session([{"speaker": "a", "text": "I love hiking in the Alps."},
                     {"speaker": "b", "text": "Which trail did you take?"}],
                    user_id="u1", session_id="s9")
    log = mem.turns(user_id="u1", session_id="s9")
    assert [t.id for t in log] == ["s9:1", "s9:2"]
    assert all(t.session_id == "s9" for t in log)


def test_append_is_durable_and_reflection_waits_for_end(open_memory, store_target):
    mem = open_memory()
    mem.append(PAINTING[:2], user_id="u1", session_id="t1")
    assert mem.memories(user_id="u1") == []
    mem.close()
    mem = open_memory()  # reopen: the log is there, the session still open
    assert [t.id for t in mem.turns(user_id="u1")] == ["s1:1", "s1:2"]
    mem.append(PAINTING[2], user_id="u1", session_id="t1")
    created = mem.end_session(user_id="u1", session_id="t1")
    assert sorted(r for m in created for r in m.refs) == ["s1:1", "s1:2", "s1:3"]
    assert mem.end_session(user_id="u1", session_id="t1") == []  # already reflected


def test_persistence_across_reopen(open_memory):
    mem = open_memory()
    mem.add_session(PAINTING, user_id="u1")
    before = [(m.id, m.text, m.refs) for m in mem.memories(user_id="u1")]
    mem.close()
    again = open_memory()
    assert [(m.id, m.text, m.refs) for m in again.memories(user_id="u1")] == before
    assert again.search("painting sunrise", user_id="u1", k=1)[0].memory.id in dict(
        (b[0], 1) for b in before)


def test_idle_session_is_reflected_on_next_open(open_memory):
    mem = open_memory(sessions={"idle_timeout": 0.01})
    mem.append(PAINTING, user_id="u1", session_id="t1")
    mem.store.close()  # the process "dies" before ending the session
    import time

    time.sleep(0.05)
    again = open_memory(sessions={"idle_timeout": 0.01})
    assert sorted(r for m in again.memories(user_id="u1") for r in m.refs) == [
        "s1:1", "s1:2", "s1:3"]


def test_ended_but_unreflected_session_recovers_exactly_once(open_memory, monkeypatch):
    # the recorded failure is due again at once
    mem = open_memory(sessions={"reflection_retry_delay": 0})
    mem.append(PAINTING, user_id="u1", session_id="t1")

    def crash(*args, **kwargs):
        raise RuntimeError("power cut during reflection")

    monkeypatch.setattr(mem.store, "commit_reflection", crash)
    with pytest.raises(ReflectionError, match="power cut"):
        mem.end_session(user_id="u1", session_id="t1")
    monkeypatch.undo()
    assert mem.memories(user_id="u1") == []
    state = mem.store.session("u1", "t1")
    assert state.failures == 1
    assert "power cut" in state.last_error
    mem.close()
    first = open_memory()
    n = len(first.memories(user_id="u1"))
    assert n >= 1
    first.close()
    assert len(open_memory().memories(user_id="u1")) == n  # a second open adds nothing


def test_size_threshold_reflects_an_open_session(open_memory):
    mem = open_memory(sessions={"max_turns": 3})
    mem.append(PAINTING, user_id="u1", session_id="long")
    assert sorted(r for m in mem.memories(user_id="u1") for r in m.refs) == [
        "s1:1", "s1:2", "s1:3"]


def test_near_duplicate_is_merged_with_version_history(open_memory):
    mem = open_memory(stages={"merge_threshold": 0.9})
    first = mem.add_session(PAINTING, user_id="u1", session_id="a")
    repeat = [Turn(t.speaker, t.text, id=t.id.replace("s1", "s3")) for t in PAINTING]
    merged = mem.add_session(repeat, user_id="u1", session_id="b")
    memories = mem.memories(user_id="u1")
    assert len(memories) == len(first)
    target = next(m for m in memories if m.id == merged[0].id)
    assert len(target.versions) == 2
    assert target.versions[0].reason == "created"
    assert target.versions[1].reason == "merged"
    assert target.versions[0].text in target.text  # the earlier text is kept, not replaced
    assert {"s1:1", "s3:1"} <= set(target.refs)
    assert target.session_ids == ["a", "b"]


def test_user_isolation(open_memory):
    mem = open_memory()
    mem.add_session(PAINTING, user_id="alice")
    mem.add_session(ADOPTION, user_id="bob")
    assert all("adopt" not in h.text for h in mem.search("adopt a child", user_id="alice", k=10))
    assert {r for m in mem.memories(user_id="bob") for r in m.refs} == {
        "s2:1", "s2:2", "s2:3", "s2:4"}
    mem.forget(user_id="bob")
    assert mem.memories(user_id="bob") == []
    assert mem.turns(user_id="bob") == []
    assert len(mem.search("adopt", user_id="bob")) == 0
    assert mem.memories(user_id="alice")
    assert mem.turns(user_id="alice")


def test_same_turn_ids_in_two_users_do_not_clash(open_memory):
    mem = open_memory()
    mem.add_session(PAINTING, user_id="alice")
    mem.add_session(PAINTING, user_id="bob")
    assert len(mem.turns(user_id="alice")) == len(mem.turns(user_id="bob")) == 3


def test_empty_bank_and_blank_query(open_memory):
    mem = open_memory()
    assert len(mem.search("anything", user_id="nobody")) == 0
    mem.add_session(PAINTING, user_id="u1")
    assert len(mem.search("   ", user_id="u1")) == 0


@pytest.mark.parametrize("bad", [
    [{"speaker": "a"}],                                   # missing text
    [{"text": "hi"}],                                     # missing speaker
    [{"speaker": "a", "text": "   "}],                    # whitespace only
    [{"speaker": "a", "text": ""}],                       # empty
    [{"speaker": "a", "text": 42}],                       # wrong type
    [{"speaker": "", "text": "hi"}],                      # empty speaker
    [{"speaker": "a", "text": "hi", "colour": "red"}],    # unknown field
    [{"speaker": "a", "text": "hi", "timestamp": "yesterday"}],
    ["just a string"],
    [],
    "not a list",
])
def test_bad_turns_raise_typed_error_and_write_nothing(open_memory, bad):
    mem = open_memory()
    with pytest.raises(InvalidInputError):
        mem.add_session(bad, user_id="u1")
    assert mem.turns(user_id="u1") == []


def test_bad_arguments(open_memory):
    mem = open_memory()
    mem.add_session(PAINTING, user_id="u1")
    for call in (lambda: mem.search(None, user_id="u1"),
                 lambda: mem.search("x", user_id="u1", k=0),
                 lambda: mem.search("x", user_id=7),
                 lambda: mem.search("x", user_id=""),
                 lambda: mem.end_session(user_id="u1", session_id="missing"),
                 lambda: mem.append(PAINTING, user_id="u1", session_id="again")):  # dup ids
        with pytest.raises(InvalidInputError):
            call()
    assert len(mem.turns(user_id="u1")) == 3


def test_control_characters_and_a_megabyte_turn_are_kept(open_memory):
    mem = open_memory()
    weird = "tab\there, bell\x07, nul\x00 inside, and unicode é😀"
    big = "word " * 200_000  # 1 MB
    mem.add_session([Turn("a", weird), Turn("b", big)], user_id="u1", session_id="s")
    log = mem.turns(user_id="u1")
    assert log[0].text == weird
    assert log[1].text == big
    assert mem.search("unicode bell", user_id="u1", k=1)[0].refs


def test_foreign_or_corrupt_database_is_refused(tmp_path, embedder):
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE accounts (id INTEGER)")
    with pytest.raises(StorageError):
        ReflectiveMemory.open(str(foreign), embedder=embedder)
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StorageError):
        ReflectiveMemory.open(str(corrupt), embedder=embedder)
    with pytest.raises(StorageError):
        ReflectiveMemory.open(str(tmp_path / "no" / "such" / "dir.db"), embedder=embedder)


def test_unknown_setting_and_bad_url_are_clear(embedder):
    with pytest.raises(ValidationError, match="candidatez"):  # pydantic's, a ValueError
        ReflectiveMemory.open(":memory:", embedder=embedder, candidatez=3)
    with pytest.raises(InvalidInputError, match="unsupported database URL"):
        ReflectiveMemory.open("mysql://host/db", embedder=embedder)


async def test_async_twins(open_memory):
    mem = open_memory()
    await mem.aadd_session(PAINTING, user_id="u1", session_id="s")
    res = await mem.asearch("sunrise painting", user_id="u1", k=2)
    assert res[0].refs
    assert len(await mem.aturns(user_id="u1")) == 3
    assert await mem.amemories(user_id="u1")
    await mem.aforget(user_id="u1")
    assert await mem.amemories(user_id="u1") == []


def test_in_memory_store(embedder):
    mem = ReflectiveMemory.open(":memory:", embedder=embedder)
    mem.add_session(PAINTING, user_id="u1")
    assert mem.search("what does Melanie paint", user_id="u1", k=1)[0].refs


def test_a_memory_gone_since_the_index_snapshot_drops_out_of_search(open_memory, monkeypatch):
    """Another process may delete memories between the index snapshot and reading their
    rows; the hits left must keep their own scores, not shift onto their neighbours'. (A
    process that searched the snapshot before keeps the memories it read then: it searches
    from a fresh one here.)"""
    writer = open_memory()
    writer.add_session(PAINTING, user_id="u1", session_id="a")
    writer.add_session(ADOPTION, user_id="u1", session_id="b")
    query = "Which agency is Caroline using to adopt?"
    full = writer.search(query, user_id="u1", k=5)
    gone = full.candidates[0].memory.id
    mem = open_memory()
    read = mem.store.memories
    monkeypatch.setattr(mem.store, "memories", lambda user_id, ids=None, **kw: [
        m for m in read(user_id, ids, **kw) if m.id != gone])
    res = mem.search(query, user_id="u1", k=5)
    assert gone not in {c.memory.id for c in res.candidates}
    before = {c.memory.id: c.score for c in full.candidates}
    assert res.candidates
    assert all(c.score == before[c.memory.id] for c in res.candidates)
    assert [c.rank for c in res.candidates] == list(range(1, len(res.candidates) + 1))
