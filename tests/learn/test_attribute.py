"""Attribution: citation parsing, `respond` with a scripted fake LLM (every `respond` test
uses one: a callable returning fixed text), and the LLM-free overlap attribution."""

from __future__ import annotations

import pytest

from rmm_core import InvalidInputError, ReflectiveMemory
from rmm_core.learn.attribute import (
    citation_prompt,
    cite_by_overlap,
    parse_citations,
    strip_citations,
)
from rmm_core.models import prompts

TEXTS = [
    "I adopted a puppy called Rex and we walk by the river every morning.",
    "My sister is getting married in Lisbon next June.",
    "I started learning the cello with a teacher called Mrs Alvarez.",
]


@pytest.mark.parametrize("text, n, expected", [
    ("Rex is your puppy [1].", 3, [1]),
    ("Lisbon [2][1], cello [3].", 3, [2, 1, 3]),
    ("Both [1, 3] and again [3].", 3, [1, 3]),
    ("From [Note 2] and [#1] and [2 and 3]", 3, [2, 1, 3]),
    ("In [2023] she wrote [7] and [0].", 3, []),
    ("I do not know. [NO_CITE]", 3, []),
    ("no markers at all", 3, []),
])
def test_parse_citations(text, n, expected):
    assert parse_citations(text, n) == expected


def test_strip_citations_keeps_other_brackets():
    assert strip_citations("Rex [1]. In [2023] [2, 3] . [NO_CITE]", 3) == "Rex. In [2023]."


def test_prompt_numbers_memories_in_rank_order(open_memory):
    mem = open_memory()
    mem.add_session([{"speaker": "user", "text": t} for t in TEXTS], user_id="u1",
                    session_id="s1")
    res = mem.search("puppy", user_id="u1", k=3)
    prompt = citation_prompt("What is my dog called?", list(res))
    assert f"[1] {res[0].text}" in prompt
    assert "What is my dog called?" in prompt
    assert "[NO_CITE]" in prompts.CITE


@pytest.fixture
def mem(open_memory) -> ReflectiveMemory:
    mem = open_memory()
    for i, text in enumerate(TEXTS):
        mem.add_session([{"speaker": "user", "text": text}], user_id="u1", session_id=f"s{i}")
    return mem


def test_respond_cites_and_learns(mem):
    prompts: list[str] = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return "Your dog is Rex [1]; also see [9]."

    answer = mem.respond("what is my dog called?", user_id="u1", llm=llm, k=2, explore=False)
    assert answer.answer == "Your dog is Rex; also see [9]."
    assert answer.cited_ids == [answer.result[0].memory.id]
    assert "Rex" in answer.memories[0].text
    assert len(prompts) == 1
    assert len(mem.store.state_log(mem.reranker.state_name("u1"))[1]) == 1


def test_respond_no_cite_still_teaches(mem):
    answer = mem.respond("favourite food?", user_id="u1", llm=lambda p: "No idea. [NO_CITE]")
    assert answer.cited == []
    assert answer.answer == "No idea."
    assert len(mem.store.state_log(mem.reranker.state_name("u1"))[1]) == 1


def test_respond_without_llm_is_a_typed_error(mem):
    with pytest.raises(InvalidInputError, match="llm"):
        mem.respond("anything", user_id="u1")
    assert len(mem.store.state_log(mem.reranker.state_name("u1"))[1]) == 0


def test_respond_with_no_memories_skips_feedback(open_memory):
    mem = open_memory()
    answer = mem.respond("hello?", user_id="nobody", llm=lambda p: "Hi [1]")
    assert answer.cited == []
    assert len(mem.store.state_log(mem.reranker.state_name("u1"))[1]) == 0


async def test_arespond(mem):
    answer = await mem.arespond("cello teacher?", user_id="u1", llm=lambda p: "Alvarez [1]",
                                k=1, explore=False)
    assert "Alvarez" in answer.memories[0].text


def test_overlap_attribution(mem):
    res = mem.search("wedding and dog", user_id="u1", k=3)
    wedding = [h.memory.id for h in res if "Lisbon" in h.text]
    answer = cite_by_overlap("Your sister gets married in Lisbon in June.", res)
    assert len(wedding) == 1
    assert answer.cited_ids == wedding
    assert cite_by_overlap("Quantum chromodynamics.", res).cited == []
    assert cite_by_overlap("", res).cited == []
    with pytest.raises(InvalidInputError):
        cite_by_overlap("x", res, min_coverage=0)
    mem.feedback(res, cited=answer.cited)
    assert len(mem.store.state_log(mem.reranker.state_name("u1"))[1]) == 1
