"""The write path's intake (`write/ingest.py`) on its own, over a real SQLite store, the real
packaged embedder and the LLM-free pipeline: no front door, no LLM."""

import pytest

from rmm_core.config import MemoryConfig
from rmm_core.errors import DuplicateTurnError, InvalidInputError
from rmm_core.storage import open_store
from rmm_core.types import Turn
from rmm_core.write.ingest import Ingestor, coerce_turns
from rmm_core.write.pipeline import build_pipeline
from rmm_core.write.reflect import Reflector

TURNS = [{"speaker": "Ann", "text": "I adopted a grey cat called Miso last week.", "id": "a1"},
         {"speaker": "Bo", "text": "Lovely! How is Miso settling in?", "id": "a2"}]


@pytest.fixture
def store(tmp_path):
    store = open_store(str(tmp_path / "m.sqlite"))
    yield store
    store.close()


def ingestor(store, embedder, **settings) -> Ingestor:
    config = MemoryConfig(**settings)
    return Ingestor(store, config, Reflector(store, embedder, build_pipeline(config),
                                             lambda user: []))


def test_turns_are_logged_at_once_and_reflected_when_the_session_ends(store, embedder):
    intake = ingestor(store, embedder)
    stored = intake.append(TURNS, user_id="u", session_id="s")
    assert [t.id for t in stored] == ["a1", "a2"]
    assert store.memories("u") == []
    memories = intake.end_session(user_id="u", session_id="s", wait=True)
    assert sorted(r for m in memories for r in m.refs) == ["a1", "a2"]
    with pytest.raises(InvalidInputError, match="no session"):
        intake.end_session(user_id="u", session_id="nope", wait=True)


def test_adding_the_same_session_again_is_a_no_op_but_other_words_are_refused(store, embedder):
    intake = ingestor(store, embedder)
    assert intake.add_session(TURNS, user_id="u", session_id="s")
    assert intake.add_session(TURNS, user_id="u", session_id="s2") == []
    changed = [{**TURNS[0], "text": "I adopted a dog."}]
    with pytest.raises(DuplicateTurnError):
        intake.add_session(changed, user_id="u", session_id="s3")


def test_a_session_at_its_size_limit_is_reflected_by_the_append(store, embedder):
    intake = ingestor(store, embedder, sessions={"max_turns": 2})
    intake.append(TURNS[:1], user_id="u", session_id="s")
    assert store.memories("u") == []
    intake.append(TURNS[1:], user_id="u", session_id="s")
    assert sorted(r for m in store.memories("u") for r in m.refs) == ["a1", "a2"]


def test_add_session_past_the_size_limit_returns_what_it_reflected(store, embedder):
    """A session of `sessions.max_turns` turns or more used to be reflected by its append
    and then come back as [] from add_session: the memories were stored but not returned."""
    intake = ingestor(store, embedder, sessions={"max_turns": 2})
    memories = intake.add_session(TURNS, user_id="u", session_id="s")
    assert sorted(r for m in memories for r in m.refs) == ["a1", "a2"]
    assert {m.id for m in memories} == {m.id for m in store.memories("u")}


def test_reflect_pending_takes_open_sessions_only_when_asked(store, embedder):
    intake = ingestor(store, embedder, sessions={"idle_timeout": 3600})
    intake.append(TURNS, user_id="u", session_id="s")
    assert intake.reflect_pending() == []
    assert sorted(r for m in intake.reflect_pending(all_open=True) for r in m.refs) == \
        ["a1", "a2"]


def test_coerce_turns_takes_one_message_or_a_list_and_refuses_the_rest():
    assert coerce_turns(("user", "hi")) == [Turn("user", "hi")]
    assert coerce_turns({"speaker": "user", "text": "hi"}) == [Turn("user", "hi")]
    assert [t.text for t in coerce_turns([("user", "a"), Turn("bot", "b")])] == ["a", "b"]
    for bad in ([], "just text", 42):
        with pytest.raises(InvalidInputError):
            coerce_turns(bad)
