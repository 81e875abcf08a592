"""`RMMRetriever` on a real memory and embedder: documents, per-call overrides, isolation,
async, LCEL (the chain's chat model is the recording fake), and LangChain's standard suite."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_rmm import RMMRetriever, format_memories
from rmm_core import ReflectiveMemory
from rmm_core.errors import InvalidInputError
from rmm_core.models.embed import default_embedder

SESSIONS = [
    ["I adopted a beagle named Biscuit last spring.", "He chews every shoe I own."],
    ["My sister Ana lives in Lisbon.", "She works there as an architect."],
    ["I am training for the Berlin marathon in September.", "I run 50 km a week now."],
    ["I started learning the cello in January.", "Bach suites are my goal."],
]


_FILLED: list[ReflectiveMemory] = []


def filled_memory() -> ReflectiveMemory:
    """One in-memory store, filled once and only read by the tests of this module: four
    sessions of user u1, one of u2."""
    if not _FILLED:
        mem = ReflectiveMemory.open(":memory:", embedder=default_embedder())
        for n, texts in enumerate(SESSIONS):
            turns = [{"speaker": "user", "text": t, "id": f"s{n}:{i}"}
                     for i, t in enumerate(texts)]
            mem.add_session(turns, user_id="u1", session_id=f"s{n}",
                            started_at=datetime(2024, 5, n + 1, tzinfo=timezone.utc))
        mem.add_session([{"speaker": "user", "text": "My cat Miso sleeps all day."}],
                        user_id="u2")
        _FILLED.append(mem)
    return _FILLED[0]


@pytest.fixture
def filled() -> ReflectiveMemory:
    return filled_memory()


def test_documents_carry_hit_text_and_provenance(filled):
    docs = RMMRetriever(memory=filled, user_id="u1", k=2).invoke("What is my dog called?")
    hits = filled.search("What is my dog called?", user_id="u1", k=2)
    assert [d.page_content for d in docs] == [h.text for h in hits]
    top = docs[0]
    assert "Biscuit" in top.page_content
    assert top.id == top.metadata["memory_id"] == hits[0].memory.id
    assert top.metadata["refs"] == ["s0:0", "s0:1"]
    assert top.metadata["session_ids"] == ["s0"]
    assert top.metadata["score"] == pytest.approx(hits[0].score)
    assert top.metadata["occurred_at"].startswith("2024-05-01")
    assert datetime.fromisoformat(top.metadata["created_at"]).tzinfo is not None


def test_k_and_user_can_be_set_per_call_and_users_stay_apart(filled):
    retriever = RMMRetriever(memory=filled, user_id="u1")
    assert len(retriever.invoke("hobbies", k=3)) == 3
    theirs = retriever.invoke("pets", user_id="u2", k=5)
    assert len(theirs) == 1
    assert "Miso" in theirs[0].page_content
    assert not any("Miso" in d.page_content for d in retriever.invoke("pets", k=5))


async def test_async_matches_sync(filled):
    retriever = RMMRetriever(memory=filled, user_id="u1", k=3)
    sync = retriever.invoke("music lessons")
    assert [d.id for d in await retriever.ainvoke("music lessons")] == [d.id for d in sync]
    assert "cello" in sync[0].page_content


def test_lcel_chain_puts_memories_into_the_prompt(filled, chat_model):
    model = chat_model("Her name is Ana.")
    prompt = ChatPromptTemplate.from_messages([
        ("system", "Answer from memory.\n{memories}"), ("human", "{question}")])
    retriever = RMMRetriever(memory=filled, user_id="u1", k=2)
    chain = {"memories": retriever | format_memories,
             "question": RunnablePassthrough()} | prompt | model
    answer = chain.invoke("Where does my sister live?")
    assert answer.text == "Her name is Ana."
    system = model.system_prompt()
    assert "[1]" in system
    assert "Lisbon" in system.split("[2]")[0]


def test_format_memories_numbers_documents_and_is_empty_without_them(filled):
    docs = RMMRetriever(memory=filled, user_id="u1", k=2).invoke("dog")
    lines = format_memories(docs).splitlines()
    assert lines[1] == f"[1] {docs[0].page_content.splitlines()[0]}"
    assert any(line.startswith("[2] ") for line in lines)
    assert format_memories([]) == ""


@pytest.mark.parametrize("kwargs", [{"memory": None}, {"user_id": ""}, {"k": 0}])
def test_bad_arguments_raise_typed_errors(mem, kwargs):
    with pytest.raises(InvalidInputError):
        RMMRetriever(**{"memory": mem, "user_id": "u1", **kwargs})


def test_bad_k_per_call_raises_typed_error(filled):
    with pytest.raises(InvalidInputError):
        RMMRetriever(memory=filled, user_id="u1").invoke("x", k=-1)


class TestRMMRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's own retriever contract."""

    @property
    def retriever_constructor(self) -> type[RMMRetriever]:
        return RMMRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"memory": filled_memory(), "user_id": "u1"}

    @property
    def retriever_query_example(self) -> str:
        return "What does my family do for a living?"
