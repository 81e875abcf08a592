"""One way to call an LLM: every LLM stage and option meters what it is given, so a plain
callable (a scripted fake LLM here) works in each as it does in `ReflectiveMemory`."""

import warnings

from rmm_core.agents.notes import LLMLinker, LLMNoteWriter
from rmm_core.agents.workflows import LLMInducer, LLMSuccessJudge, Trajectory
from rmm_core.agents.working import LLMSummarizer
from rmm_core.models.llm import MeteredLLM
from rmm_core.read.scm import LLMGate, LLMSummaryJudge
from rmm_core.types import Turn
from rmm_core.write.segment import IncrementalLLMSegmenter, LLMSegmenter


def test_each_llm_stage_meters_a_plain_callable():
    def fake(prompt: str) -> str:
        return "yes"

    stages = [LLMNoteWriter(fake), LLMLinker(fake), LLMGate(fake), LLMSummaryJudge(fake),
              LLMSegmenter(fake), IncrementalLLMSegmenter(fake), LLMInducer(fake),
              LLMSuccessJudge(fake), LLMSummarizer(fake)]
    assert all(isinstance(stage.llm, MeteredLLM) for stage in stages)


def test_a_callable_answers_the_workflow_judge_without_falling_back():
    calls = []

    def fake(prompt: str) -> str:
        calls.append(prompt)
        return "Yes."

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback would warn
        verdict = LLMSuccessJudge(fake).judge(Trajectory("book a table", [], "error: closed"))
        same = IncrementalLLMSegmenter(fake).continues([Turn("a", "hi")], Turn("b", "hello"))
    assert verdict is True
    assert same is True
    assert len(calls) == 2
