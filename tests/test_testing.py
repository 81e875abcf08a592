"""The shipped test doubles: `ScriptedLLM` routes prompts by the template constants, and
`DeterministicEmbedder` is stable; both drive a real in-memory `ReflectiveMemory`."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

import rmm_core.testing
from rmm_core import ReflectiveMemory
from rmm_core.errors import InvalidInputError, LLMFallbackWarning
from rmm_core.models import prompts
from rmm_core.models.embed import Embedder
from rmm_core.models.llm import LLM
from rmm_core.testing import (
    Call,
    DeterministicEmbedder,
    ScriptedLLM,
    UnscriptedPromptError,
    prompt_task,
    prompt_templates,
)

SESSION_1 = [{"speaker": "Ann", "text": "I adopted a beagle called Rex yesterday!"},
             {"speaker": "Bob", "text": "Congrats! How is he settling in?"},
             {"speaker": "Ann", "text": "Great, he loves the park near my flat."}]
SESSION_2 = [{"speaker": "Ann", "text": "Rex learned to sit, my beagle is so smart."},
             {"speaker": "Bob", "text": "Nice, well done Rex."}]
EXTRACT_1 = json.dumps({"Ann": [{"summary": "Ann adopted a beagle named Rex.",
                                 "reference": [0, 2]}], "Bob": "NO_TRAIT"})
# the same summary again: the same vector, so the stored memory is a candidate to merge into
EXTRACT_2 = json.dumps({"Ann": [{"summary": "Ann adopted a beagle named Rex.",
                                 "reference": [0]}], "Bob": "NO_TRAIT"})


def _extract_prompt() -> str:
    return prompts.EXTRACT.format(max_words=40, no_trait=prompts.NO_TRAIT,
                                  speakers='["Ann", "Bob"]', date="unknown", topics="",
                                  turns="[0] Ann: hi")


def test_exports_are_public_and_satisfy_the_core_protocols():
    assert sorted(rmm_core.testing.__all__) == sorted(
        ["Call", "DeterministicEmbedder", "ScriptedLLM", "UnscriptedPromptError",
         "prompt_task", "prompt_templates"])
    assert isinstance(ScriptedLLM(), LLM)
    assert isinstance(DeterministicEmbedder(), Embedder)


def test_every_template_constant_is_a_task_named_after_it():
    tasks = prompt_templates()
    assert tasks["extract"] is prompts.EXTRACT
    assert tasks["cite"] is prompts.CITE
    assert "no_trait" not in tasks  # a constant without fields is not a template
    assert len(tasks) == 17
    for task, template in tasks.items():
        filled = template.replace("{{", "\0").replace("}}", "\1")
        example = "".join(part.split("}", 1)[-1] for part in filled.split("{"))
        assert prompt_task(example.replace("\0", "{").replace("\1", "}")) == task


def test_a_repair_prompt_quoting_another_task_is_a_repair():
    repair = prompts.REPAIR.format(problem="no JSON", prompt=_extract_prompt(), answer="?")
    assert prompt_task(_extract_prompt()) == "extract"
    assert prompt_task(repair) == "repair"


def test_a_reworded_template_still_routes_by_its_constant(monkeypatch):
    # worded so that the old tests' substring matching ("Split the conversation" ->
    # segment) would have sent it to the wrong answer
    reworded = ("Split the conversation below into notes about each speaker, at most "
                "{max_words} words each ({no_trait} when none). Keys: {speakers}.\n"
                "Date: {date}\n{topics}{turns}\n")
    monkeypatch.setattr(prompts, "EXTRACT", reworded)
    llm = ScriptedLLM(segment=["[[0, 2]]"], extract=[EXTRACT_1])
    prompt = reworded.format(max_words=40, no_trait="NO_TRAIT", speakers="[]", date="-",
                             topics="", turns="[0] Ann: hi")
    assert llm.complete(prompt) == EXTRACT_1
    assert llm.calls == [Call("extract", prompt)]


def test_a_reworded_template_routes_inside_the_pipeline(monkeypatch):
    reworded = prompts.EXTRACT.replace("You keep long-term notes about the people",
                                       "Take notes on the people")
    monkeypatch.setattr(prompts, "EXTRACT", reworded)
    llm = ScriptedLLM(segment=["[[0, 2]]"], extract=[EXTRACT_1])
    mem = ReflectiveMemory.open(":memory:", embedder=DeterministicEmbedder(), llm=llm)
    memories = mem.add_session(SESSION_1, user_id="u", session_id="s1")
    assert [m.text for m in memories] == ["Ann adopted a beagle named Rex."]
    assert llm.tasks() == ["segment", "extract"]
    assert llm.prompts("extract")[0].startswith("Take notes on the people")
    mem.close()


def test_an_unknown_prompt_is_a_clear_error_and_is_recorded():
    llm = ScriptedLLM(extract=["{}"])
    with pytest.raises(UnscriptedPromptError, match="matches none of the templates"):
        llm.complete("What is the capital of France?")
    assert llm.calls == [Call(None, "What is the capital of France?")]
    with pytest.raises(UnscriptedPromptError, match=r"no answer scripted for a 'cite' prompt"):
        llm.complete(prompts.CITE.format(memories="(no notes)", query="Who is Rex?"))
    assert llm.tasks() == [None, "cite"]


def test_an_unknown_task_or_empty_script_is_refused():
    with pytest.raises(InvalidInputError, match="no prompt template for task"):
        ScriptedLLM(extrakt=["{}"])
    with pytest.raises(InvalidInputError, match="is empty"):
        ScriptedLLM(extract=[])


def test_answers_come_in_order_per_task_and_the_last_repeats():
    llm = ScriptedLLM(gate=["YES", "NO"], cite=[lambda p: p.rsplit("Question: ", 1)[1][:5]])
    gate = prompts.GATE.format(previous="(none)", query="hi")
    cite = prompts.CITE.format(memories="(no notes)", query="Who is Rex?")
    assert [llm.complete(gate), llm.complete(cite), llm.complete(gate), llm.complete(gate)] \
        == ["YES", "Who i", "NO", "NO"]
    assert llm.tasks() == ["gate", "cite", "gate", "gate"]
    llm.script("gate", "MAYBE")
    assert llm.complete(gate) == "MAYBE"


def test_scripted_exceptions_are_raised():
    llm = ScriptedLLM(gate=[ConnectionError("reset"), TimeoutError, "YES"])
    gate = prompts.GATE.format(previous="(none)", query="hi")
    with pytest.raises(ConnectionError, match="reset"):
        llm.complete(gate)
    with pytest.raises(TimeoutError):
        llm.complete(gate)
    assert asyncio.run(llm.acomplete(gate)) == "YES"


def test_the_embedder_is_deterministic_normalised_and_sized():
    embedder = DeterministicEmbedder(dim=32)
    first = embedder.embed(["Rex is a beagle", "Ann lives in Porto"])
    again = DeterministicEmbedder(dim=32).embed(["Ann lives in Porto", "Rex is a beagle"])
    assert first.dtype == np.float32
    assert first.shape == (2, 32)
    assert np.array_equal(first, again[::-1])
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)
    assert abs(float(first[0] @ first[1])) < 0.9  # different texts, different vectors
    assert DeterministicEmbedder().embed([]).shape == (0, 64)
    assert DeterministicEmbedder().name == "deterministic-64"


@pytest.mark.parametrize("dim", [0, -3, 2.5, True])
def test_the_embedder_refuses_a_bad_dim(dim):
    with pytest.raises(InvalidInputError, match="dim"):
        DeterministicEmbedder(dim=dim)


def test_the_embedder_refuses_a_bare_string():
    with pytest.raises(InvalidInputError, match="list of texts"):
        DeterministicEmbedder().embed("Rex")


def test_a_reflection_end_to_end_with_both_doubles():
    llm = ScriptedLLM(
        segment=["[[0, 2]]"], extract=[EXTRACT_1, EXTRACT_2],
        reconcile=["N1: Merge(0, Ann adopted a beagle named Rex, who learned to sit.)"],
        cite=["Rex is Ann's beagle [1]."])
    mem = ReflectiveMemory.open(":memory:", embedder=DeterministicEmbedder(), llm=llm)
    mem.add_session(SESSION_1, user_id="u", session_id="s1")
    (merged,) = mem.add_session(SESSION_2, user_id="u", session_id="s2")
    assert llm.tasks() == ["segment", "extract", "extract", "reconcile"]  # 2 turns: no split
    [memory] = mem.memories(user_id="u")
    assert memory.id == merged.id
    assert memory.text == "Ann adopted a beagle named Rex, who learned to sit."
    assert [v.reason for v in memory.versions] == ["created", "merged"]
    answer = mem.respond("Who is Rex?", user_id="u")
    assert answer.cited_ids == [memory.id]
    assert "[1] Ann adopted a beagle named Rex" in llm.prompts("cite")[0]
    mem.close()


def test_an_unscripted_task_in_the_pipeline_falls_back_and_is_recorded():
    llm = ScriptedLLM(extract=[EXTRACT_1])  # no segment answer
    mem = ReflectiveMemory.open(":memory:", embedder=DeterministicEmbedder(), llm=llm)
    with pytest.warns(LLMFallbackWarning, match="UnscriptedPromptError"):
        mem.add_session(SESSION_1, user_id="u", session_id="s1")
    assert llm.tasks()[0] == "segment"
    mem.close()
