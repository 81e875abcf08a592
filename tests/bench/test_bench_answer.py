"""`rmm bench answer`: verdict parsing, retries, refusals and garbage from the judge, the
three contexts, the question draw, the resumable results file and the command end to end.

Every test but the last drives the reader and the judge with the scripted fake LLM
(`rmm_core.testing.ScriptedLLM`, through the `MeteredLLM` every call goes through); the
end-to-end ones use the real memory and the packaged embedder on the shipped tiny JSON Lines
file. `test_real_local_model_answers_three_questions` runs the real local model (slow).
"""

from __future__ import annotations

import json
import re
import sys
import types
from datetime import datetime
from pathlib import Path

import pytest

from rmm_core.bench.answer_contexts import FullContext, PassagesContext
from rmm_core.bench.answer_grade import TYPE_GUIDANCE, judge, parse_grade, parse_verdict, read
from rmm_core.bench.answer_questions import items
from rmm_core.bench.answer_report import summarise
from rmm_core.bench.answer_results import Results
from rmm_core.bench.records import Conversation, Question, Session
from rmm_core.cli import main
from rmm_core.errors import InvalidInputError
from rmm_core.models.llm import MeteredLLM
from rmm_core.models.parse import ParseError
from rmm_core.ops.commands import BAD_DATA, REFUSED, USAGE
from rmm_core.testing import ScriptedLLM
from rmm_core.types import Turn

TINY = Path(__file__).parents[1] / "data" / "conversations.jsonl"
BEAM = Path(__file__).resolve().parents[3] / "shared" / "data" / "beam" / "100K"


def metered(llm: ScriptedLLM) -> MeteredLLM:
    return MeteredLLM(llm, timeout=30, workers=1)


# --- parsing the judge ---------------------------------------------------------------------

@pytest.mark.parametrize("reply, verdict", [
    ("CORRECT", True), ("**Correct**.", True), ("WRONG", False), ("Incorrect", False),
    ("The answer is wrong: it names another city.", False),
])
def test_verdicts_are_read_from_the_reply(reply, verdict):
    assert parse_verdict(reply) is verdict


@pytest.mark.parametrize("reply", ["", "Maybe.", "CORRECT or WRONG", "correctly"])
def test_a_reply_without_one_clear_verdict_is_unusable(reply):
    with pytest.raises(ParseError):
        parse_verdict(reply)


def test_rubric_grades_are_read_from_the_reply():
    assert [parse_grade(r) for r in ("MET", "Partly.", "missed", "NOT MET")] == \
        [1.0, 0.5, 0.0, 0.0]
    with pytest.raises(ParseError):
        parse_grade("MET, or maybe PARTLY")


# --- one question: reader and judge (scripted fake LLM) ------------------------------------

def test_the_reader_gets_the_context_and_the_judge_the_gold_answer():
    llm = ScriptedLLM(read_and_answer="Biscuit", grade_answer="CORRECT")
    graded = read(metered(llm), "What is the dog called?", "[1] Ana: our beagle Biscuit")
    judge(metered(llm), graded, "What is the dog called?", "Biscuit", "1")
    assert (graded.answer, graded.score, graded.reader_calls, graded.judge_calls) == \
        ("Biscuit", 1.0, 1, 1)
    assert "[1] Ana: our beagle Biscuit" in llm.prompts("read_and_answer")[0]
    grade_prompt = llm.prompts("grade_answer")[0]
    assert "Reference answer: Biscuit" in grade_prompt
    assert "Answer to grade: Biscuit" in \
        grade_prompt
    assert graded.prompt_tokens > 0
    assert graded.judge_tokens > 0


def test_a_failed_reader_call_is_tried_again():
    llm = ScriptedLLM(read_and_answer=[RuntimeError("overloaded"), "Biscuit"],
                      grade_answer="CORRECT")
    graded = read(metered(llm), "q?", "ctx", retries=1)
    assert graded.answer == "Biscuit"
    assert graded.reader_calls == 2
    assert graded.errors
    assert "overloaded" in graded.errors[0]


def test_a_reader_that_always_fails_scores_zero_without_asking_the_judge():
    llm = ScriptedLLM(read_and_answer=RuntimeError("refused"), grade_answer="CORRECT")
    graded = read(metered(llm), "q?", "ctx", retries=2)
    judge(metered(llm), graded, "q?", "gold", "1")
    assert graded.answer is None
    assert graded.reader_calls == 3
    assert graded.score == 0.0
    assert llm.prompts("grade_answer") == []


def test_a_reader_that_refuses_in_words_is_graded_like_any_answer():
    llm = ScriptedLLM(read_and_answer="I'm sorry, I can't help with that.",
                      grade_answer="WRONG")
    graded = read(metered(llm), "q?", "ctx")
    judge(metered(llm), graded, "q?", "Paris", "1")
    assert graded.answer.startswith("I'm sorry")
    assert graded.score == 0.0


def test_a_garbage_verdict_is_repaired_once():
    llm = ScriptedLLM(read_and_answer="Paris", grade_answer="hmm, hard to say",
                      repair="CORRECT")
    graded = judge(metered(llm), read(metered(llm), "q?", "ctx"), "q?", "Paris", "1")
    assert graded.score == 1.0
    assert graded.judge_calls == 2
    assert "CORRECT or WRONG" in llm.prompts("repair")[0]


def test_a_judge_that_answers_garbage_twice_leaves_the_question_unjudged():
    llm = ScriptedLLM(read_and_answer="Paris", grade_answer="bananas", repair="more bananas")
    graded = judge(metered(llm), read(metered(llm), "q?", "ctx"), "q?", "Paris", "1",
                   retries=3)
    assert graded.score is None
    assert graded.judge_calls == 2
    assert graded.errors[-1].startswith("judge unusable")
    row = summarise([{"context": "memory", "category": "1", **_record(graded)}],
                    ["memory"])["memory"]
    assert (row["score %"], row["unjudged"], row["failed"]) == (0.0, 1, 0)


def test_a_rubric_is_graded_item_by_item_and_averaged():
    llm = ScriptedLLM(read_and_answer="Use Flask-Login.", grade_rubric=["MET", "PARTLY"])
    graded = read(metered(llm), "q?", "ctx")
    judge(metered(llm), graded, "q?", "", "preference_following",
          rubric=("mentions Flask-Login", "keeps dependencies few"))
    assert graded.score == 0.75
    assert graded.judge_calls == 2
    assert "Requirement: keeps dependencies few" in llm.prompts("grade_rubric")[1]


def test_longmemeval_types_get_their_own_judging_and_locomo_none():
    llm = ScriptedLLM(read_and_answer="3 weeks", grade_answer="CORRECT")
    for category in ("temporal-reasoning", "2"):
        judge(metered(llm), read(metered(llm), "q?", "ctx"), "q?", "4 weeks", category)
    temporal, locomo = llm.prompts("grade_answer")
    assert TYPE_GUIDANCE["temporal-reasoning"] in temporal
    assert not any(g in locomo for g in TYPE_GUIDANCE.values())


def _record(graded) -> dict:
    return {**graded.as_record(), "context_words": 10, "context_tokens": 14}


# --- contexts and questions ------------------------------------------------------------------

def _conversation(turns: int = 40) -> Conversation:
    sessions = [Session(f"s{s}", datetime(2024, 1, s + 1), [
        Turn("Ana" if t % 2 else "Ben", f"turn {s}-{t} about topic {t} " + "word " * 20,
             f"{s}:{t}") for t in range(turns // 2)]) for s in range(2)]
    questions = [Question(f"question {n}?", "a", frozenset({"0:1"}), n % 4 + 1)
                 for n in range(20)]
    return Conversation("c", ("Ana", "Ben"), sessions, questions)


def test_the_full_conversation_keeps_its_latest_turns_when_it_does_not_fit():
    conv = _conversation()
    whole = FullContext(window=100_000, reserve=200).build(conv, "q?")
    assert whole.text.startswith("--- s0 (01 January 2024)")
    assert "1:19" not in whole.text
    assert whole.text.rstrip().endswith("turn 1-19 about topic 19 " + "word " * 19 + "word")
    cut = FullContext(window=600, reserve=200).build(conv, "q?")
    assert cut.tokens <= 400
    assert cut.text.endswith(whole.text[-200:])
    assert "turn 0-0 " not in cut.text
    with pytest.raises(InvalidInputError):
        FullContext(window=100, reserve=200)


def test_passages_fill_the_word_budget_strictly(embedder):
    conv = _conversation()
    context = PassagesContext(embedder, max_words=100)
    context.prepare(conv)
    built = context.build(conv, "topic 7")
    assert 0 < built.words <= 100
    assert re.match(r"\[1\] (Ana|Ben): turn \d-7 about topic 7", built.text)


def test_a_limit_draws_every_category_in_turn():
    conv = _conversation()
    chosen = items("jsonl", TINY, [conv], limit=8, seed=1)
    assert sorted(i.category for i in chosen) == ["1", "1", "2", "2", "3", "3", "4", "4"]
    assert sorted(i.category for i in chosen[:4]) == ["1", "2", "3", "4"]
    assert [i.key for i in items("jsonl", TINY, [conv], 8, seed=1)] == [i.key for i in chosen]
    with pytest.raises(InvalidInputError):
        items("jsonl", TINY, [conv], limit=0)


@pytest.mark.skipif(not (BEAM / "1").is_dir(), reason="needs ../shared/data/beam")
def test_beam_asks_the_rubric_probes_only():
    from rmm_core.bench.beam import load_beam

    convs = load_beam(BEAM, [0])
    chosen = items("beam", BEAM, convs, limit=None)
    assert chosen
    assert all(i.rubric for i in chosen)
    assert not {"event_ordering", "abstention"} & {i.category for i in chosen}


# --- the results file ------------------------------------------------------------------------

def test_results_continue_and_drop_a_line_cut_by_a_kill(tmp_path):
    path = tmp_path / "r.jsonl"
    results = Results(path, {"reader": "a"})
    results.add("q1/memory", {"score": 1.0})
    results.add("q2/memory", {"score": 0.0})
    with path.open("a") as out:
        out.write('{"key": "q3/memory", "sco')
    again = Results(path, {"reader": "a"})
    assert set(again.records) == {"q1/memory", "q2/memory"}
    again.add("q3/memory", {"score": 1.0})
    assert [json.loads(line).get("key") for line in path.read_text().splitlines()] == \
        [None, "q1/memory", "q2/memory", "q3/memory"]


def test_results_of_another_run_are_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    Results(path, {"reader": "a", "max_words": 1000})
    with pytest.raises(InvalidInputError, match="max_words"):
        Results(path, {"reader": "a", "max_words": 500})
    path.write_text('{"key": "x"}\nnot json\n{"key": "y"}\n')
    with pytest.raises(InvalidInputError, match="line 2"):
        Results(path, {"reader": "a"})


# --- the command end to end (scripted fake LLM as a "LangChain" object) ----------------------

@pytest.fixture
def scripted(monkeypatch):
    """A ScriptedLLM reachable by `--langchain scripted_answers:LLM`: the reader answers
    "Biscuit" only when the context names Biscuit, the judge compares with the gold answer."""
    def reader(prompt: str) -> str:
        return "Biscuit" if "Biscuit" in prompt.split("Question:")[0] else "I do not know."

    def grader(prompt: str) -> str:
        gold = re.search(r"Reference answer: (.*)", prompt)[1]
        answer = re.search(r"Answer to grade: (.*)", prompt)[1]
        return "CORRECT" if gold and gold.lower() in answer.lower() else "WRONG"

    llm = ScriptedLLM(read_and_answer=reader, grade_answer=grader)
    monkeypatch.setitem(sys.modules, "scripted_answers", types.SimpleNamespace(LLM=llm))
    return llm


def _answer(tmp_path, *extra: str) -> int:
    return main(["--no-progress", "bench", "answer", "--dataset", "jsonl", "--data", str(TINY),
                 "--langchain", "scripted_answers:LLM", "--results",
                 str(tmp_path / "r.jsonl"), "--json", str(tmp_path / "f.json"), *extra])


def test_the_command_grades_each_context_and_continues_a_killed_run(tmp_path, scripted,
                                                                    capsys):
    assert _answer(tmp_path, "--window", "2000", "--markdown", str(tmp_path / "b.md")) == 0
    figures = json.loads((tmp_path / "f.json").read_text())
    assert list(figures) == ["memory", "passages", "full"]
    for row in figures.values():  # the dog question is answered from every context
        assert row["questions"] == 2
        assert row["score %"] == 50.0
        assert row["reader calls"] == 2
        assert row["judge calls"] == 2
    assert figures["memory"]["context words/q"] <= 1000
    page = (tmp_path / "b.md").read_text()
    assert page.startswith("<!-- bench-answer:jsonl:begin -->")
    assert "| **memory** |" in page
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(lines) == 1 + 6
    # a kill during the last record: the rerun asks only for what is missing
    (tmp_path / "r.jsonl").write_text("\n".join(lines[:-2]) + "\n" + lines[-1][:30])
    calls = len(scripted.calls)
    assert _answer(tmp_path, "--window", "2000") == 0
    assert len(scripted.calls) - calls == 4  # two records: a reader and a judge call each
    again = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert sorted(r["key"] for r in again[1:]) == sorted(json.loads(x)["key"]
                                                         for x in lines[1:])
    assert "2 of 2 questions graded" in capsys.readouterr().out
    (tmp_path / "r.jsonl").write_text("\n".join(lines[:4]) + "\n")  # two questions' records
    calls = len(scripted.calls)
    assert _answer(tmp_path, "--window", "2000", "--report") == 0
    assert len(scripted.calls) == calls  # --report asks nothing
    assert json.loads((tmp_path / "f.json").read_text())["memory"]["questions"] == 1
    assert "1 of 2 questions graded" in capsys.readouterr().out


def test_a_rerun_with_other_settings_is_refused(tmp_path, scripted, capsys):
    assert _answer(tmp_path, "--contexts", "passages") == 0
    assert _answer(tmp_path, "--contexts", "passages", "--max-words", "50") == BAD_DATA
    assert "max_words" in capsys.readouterr().err


def test_an_interrupted_run_keeps_what_it_graded(tmp_path, scripted, monkeypatch, capsys):
    built = []

    def build(self, conv, question):
        if built:
            raise KeyboardInterrupt
        built.append(question)
        return FullContext(window=2000, reserve=200).build(conv, question)

    monkeypatch.setattr(PassagesContext, "build", build)
    assert _answer(tmp_path, "--contexts", "passages") == REFUSED
    assert "the same command continues" in capsys.readouterr().err
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert [json.loads(line)["question"] for line in lines[1:]] == built


def test_bad_input_gives_a_clear_error(tmp_path, scripted, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"conversation": "a", "session": "s1"\n')
    assert main(["bench", "answer", "--dataset", "jsonl", "--data", str(bad),
                 "--local-llm"]) == BAD_DATA
    assert "line 1: not JSON" in capsys.readouterr().err
    assert _answer(tmp_path, "--contexts", "memory,summaries") == USAGE
    assert "unknown context" in capsys.readouterr().err
    assert main(["bench", "answer", "--dataset", "jsonl", "--data", str(TINY)]) == USAGE
    assert "name the reader" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "answer", "--dataset", "nope", "--data", str(TINY), "--local-llm"])


def test_an_unreachable_endpoint_stops_the_run_at_once(tmp_path, capsys):
    code = main(["--no-progress", "bench", "answer", "--dataset", "jsonl", "--data", str(TINY),
                 "--contexts", "passages", "--llm-url", "http://127.0.0.1:9/v1",
                 "--retries", "0", "--results", str(tmp_path / "r.jsonl")])
    assert code == REFUSED
    assert "127.0.0.1:9" in capsys.readouterr().err
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 2  # the run, one record


# --- the real local model --------------------------------------------------------------------

@pytest.mark.slow
def test_real_local_model_answers_three_questions(tmp_path, capsys):
    """The real local model (local-llm extra) as reader and judge on the tiny file's
    questions with the memory's context: every answer read and graded."""
    pytest.importorskip("xllamacpp", reason='needs pip install "reflective-memory[local-llm]"')
    code = main(["--no-progress", "bench", "answer", "--dataset", "jsonl", "--data", str(TINY),
                 "--local-llm", "--contexts", "memory", "--max-tokens", "48",
                 "--results", str(tmp_path / "r.jsonl")])
    assert code == 0
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()][1:]
    print(records)
    assert len(records) == 2  # the third question has no gold answer to grade against
    assert all(r["answer"] and r["score"] is not None for r in records)
    dog = next(r for r in records if "dog" in r["question"])
    assert "biscuit" in dog["answer"].lower()
