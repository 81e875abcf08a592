"""A-MEM notes through the public API: attributes, links, evolution, link-following search.

The LLM tests use `rmm_core.testing.ScriptedLLM` (answers by prompt template); the slow
test runs the real local LLM (`rmm_core.models.local_llm`).
"""

from __future__ import annotations

import json

import pytest

from rmm_core import ReflectiveMemory
from rmm_core.agents.notes import ParseError, parse_links, parse_notes
from rmm_core.errors import InvalidInputError
from rmm_core.models.embed import HashEmbedder
from rmm_core.storage.base import AttrsUpdate
from rmm_core.testing import ScriptedLLM

DOG_1 = [{"speaker": "Ann", "text": "I adopted a beagle puppy named Rex from the shelter."},
         {"speaker": "Bob", "text": "Lovely! How old is the beagle Rex?"}]
DOG_2 = [{"speaker": "Ann", "text": "Rex the beagle puppy chewed my shoes again."},
         {"speaker": "Bob", "text": "Beagle puppies chew. Get Rex some chew toys."}]
JOB = [{"speaker": "Ann", "text": "My job interview at the bank went well."},
       {"speaker": "Bob", "text": "When will the bank call you back about the job?"}]


def _mem(embedder, **settings) -> ReflectiveMemory:
    return ReflectiveMemory.open(":memory:", embedder=embedder,
                                 **{"notes.enabled": True, **settings})


def by_text(mem: ReflectiveMemory, user: str, needle: str):
    return next(m for m in mem.memories(user_id=user) if needle in m.text)


def test_llm_free_notes_have_keywords_tags_context(embedder):
    mem = _mem(embedder)
    mem.add_session(DOG_1, user_id="u")
    mem.add_session(JOB, user_id="u")
    dog = by_text(mem, "u", "adopted")
    assert "rex" in dog.attrs["keywords"] or "beagle" in " ".join(dog.attrs["keywords"])
    assert dog.attrs["tags"]
    assert dog.attrs["context"].startswith("Ann and Bob on")
    job = by_text(mem, "u", "interview")
    assert any("job" in k or "bank" in k for k in job.attrs["keywords"])


def test_related_memories_link_both_ways_and_unrelated_do_not(embedder):
    mem = _mem(embedder)
    for session in (DOG_1, JOB, DOG_2):
        mem.add_session(session, user_id="u")
    dog1, dog2 = by_text(mem, "u", "adopted"), by_text(mem, "u", "chewed")
    job = by_text(mem, "u", "interview")
    assert dog2.id in dog1.attrs["links"]
    assert dog1.id in dog2.attrs["links"]
    assert job.id not in dog2.attrs["links"]


def test_notes_off_by_default_leave_attrs_alone(embedder):
    mem = ReflectiveMemory.open(":memory:", embedder=embedder)
    mem.add_session(DOG_1, user_id="u")
    assert "links" not in mem.memories(user_id="u")[0].attrs


def test_follow_links_brings_a_linked_memory_into_the_top_k(embedder):
    mem = _mem(embedder, notes={"link_threshold": 0.3})
    for session in (DOG_1, JOB, DOG_2):
        mem.add_session(session, user_id="u")
    query = "What did Ann adopt from the shelter?"
    plain = mem.search(query, user_id="u", k=2)
    linked = mem.search(query, user_id="u", k=2, follow_links=True)
    top = plain[0].memory
    assert len(linked) == 2
    assert linked[0].memory.id == top.id
    assert linked[1].memory.id in top.attrs["links"]
    assert [h.rank for h in linked] == [1, 2]
    assert linked[1].text.endswith(linked[1].memory.text)


def test_notes_in_key_changes_key_and_key_vector(embedder):
    mem = _mem(embedder, notes={"in_key": True})
    mem.add_session(DOG_1, user_id="u")
    memory = mem.memories(user_id="u")[0]
    assert memory.key.startswith(memory.attrs["key_base"])
    assert "keywords:" in memory.key
    vector = mem.store.memory_vectors("u", [memory.id])[memory.id][0]
    assert vector @ embedder.embed([memory.key])[0] == pytest.approx(1.0, abs=1e-4)


def test_update_memory_attrs_is_user_scoped_and_versioned(embedder):
    mem = ReflectiveMemory.open(":memory:", embedder=embedder)
    mem.add_session(DOG_1, user_id="u")
    memory = mem.memories(user_id="u")[0]
    with pytest.raises(InvalidInputError):
        mem.store.update_memory_attrs("other", [AttrsUpdate(memory.id, {"x": 1})])
    assert mem.memories(user_id="u")[0].attrs == memory.attrs
    [after] = mem.store.update_memory_attrs(
        "u", [AttrsUpdate(memory.id, {**memory.attrs, "context": "c"}, reason="evolved",
                          source="m2")])
    assert after.attrs["context"] == "c"
    assert [v.reason for v in after.versions] == ["created", "evolved"]
    assert after.versions[-1].text == memory.text
    assert after.versions[-1].source == "m2"


# LLM notes, links and evolution with a scripted LLM ----------------------------------------------
def _notes_answer(call: int):
    """The note prompt's answer: fixed keywords and tags for every note listed, and a
    context naming the call it came from."""
    def answer(prompt: str) -> str:
        n = prompt.split("Notes:\n", 1)[1].count("\n[") + 1
        return json.dumps([{"note": i, "keywords": [f"kw{i}"], "tags": ["pets"],
                            "context": f"context {call}"} for i in range(n)])
    return answer


LINK_NOTE_0 = ('```json\n{"links": [0], "updates": [{"note": 0, '
               '"context": "Ann\'s dog Rex, now a chewer", "tags": ["pets", "dogs"]}]}\n```')


def test_llm_links_and_evolution_keep_the_earlier_note(embedder):
    llm = ScriptedLLM(notes=[_notes_answer(1), _notes_answer(2)], links=[LINK_NOTE_0])
    mem = ReflectiveMemory.open(":memory:", embedder=embedder, notes={"enabled": True},
                                segmentation={"kind": "embedding"},
                                stages={"extraction": "segment", "reconciliation": "threshold"},
                                llm=llm)
    mem.add_session(DOG_1, user_id="u")
    first = mem.memories(user_id="u")[0]
    assert first.attrs["keywords"] == ["kw0"]
    assert first.attrs["context"] == "context 1"
    mem.add_session(DOG_2, user_id="u")
    old = mem.memories(user_id="u")[0]
    new = by_text(mem, "u", "chewed")
    assert new.id in old.attrs["links"]
    assert old.id in new.attrs["links"]
    assert old.attrs["context"] == "Ann's dog Rex, now a chewer"
    assert old.attrs["tags"] == ["pets", "dogs"]
    assert old.attrs["keywords"] == ["kw0"]
    assert old.attrs["note_history"][0]["context"] == "context 1"
    assert old.attrs["note_history"][0]["by"] == new.id
    assert old.versions[-1].reason == "evolved"
    assert old.versions[-1].source == new.id
    assert llm.tasks() == ["notes", "notes", "links"]


def test_broken_llm_notes_fall_back_to_tfidf(embedder):
    mem = ReflectiveMemory.open(":memory:", embedder=embedder, notes={"enabled": True},
                                segmentation={"kind": "embedding"},
                                stages={"extraction": "segment", "reconciliation": "threshold"},
                                llm=lambda prompt: "no json here")
    with pytest.warns(UserWarning):
        mem.add_session(DOG_1, user_id="u")
    memory = mem.memories(user_id="u")[0]
    assert memory.attrs["keywords"]
    assert memory.attrs["context"].startswith("Ann and Bob")


def test_parsers_reject_bad_answers():
    with pytest.raises(ParseError, match="missing"):
        parse_notes('[{"note": 0, "context": "x"}]', 2)
    with pytest.raises(ParseError, match="context"):
        parse_notes('[{"note": 0, "keywords": ["a"]}]', 1)
    with pytest.raises(ParseError, match="stored note number"):
        parse_links('{"links": [5]}', [])
    assert parse_links('{"links": [], "updates": []}', []).links == []


def test_hash_embedder_pipeline_runs_notes_without_sklearn_models():
    mem = _mem(HashEmbedder())
    mem.add_session(DOG_1, user_id="u")
    mem.add_session(DOG_2, user_id="u")
    assert all("context" in m.attrs for m in mem.memories(user_id="u"))


@pytest.mark.slow
def test_real_local_llm_writes_notes_and_links(embedder):
    local_llm = pytest.importorskip("rmm_core.models.local_llm")
    try:
        llm = local_llm.LocalLLM(max_tokens=400)
    except Exception as exc:  # the model parts or xllamacpp are not installed
        pytest.skip(f"local LLM unavailable: {exc}")
    mem = ReflectiveMemory.open(":memory:", embedder=embedder, notes={"enabled": True},
                                segmentation={"kind": "embedding"},
                                stages={"extraction": "segment", "reconciliation": "threshold"},
                                llm=llm)
    mem.add_session(DOG_1, user_id="u")
    mem.add_session(DOG_2, user_id="u")
    memories = mem.memories(user_id="u")
    assert all(m.attrs.get("context") and m.attrs.get("keywords") for m in memories)
    assert all("links" in m.attrs for m in memories)
