"""SCM: the activation gate and the budgeted context builder, alone and through
`ReflectiveMemory.recall`. `test_llm_gate_*` and `test_llm_judge_*` use scripted fake LLMs
(plain callables); everything else runs the LLM-free forms with the real embedder."""

from __future__ import annotations

import pytest

from rmm_core import InvalidInputError, ReflectiveMemory, Turn
from rmm_core.errors import LLMFallbackWarning
from rmm_core.read.scm import (
    Candidate,
    ContextBuilder,
    LLMGate,
    LLMSummaryJudge,
    OverlapJudge,
    RuleGate,
    SCMController,
    candidates_from,
)
from rmm_core.text import count_words
from rmm_core.types import Memory, MemoryHit

SESSION = [
    Turn("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful.",
         id="D1:1"),
    Turn("Melanie", "That is wonderful! I painted a sunrise over the lake last week.", id="D1:2"),
    Turn("Caroline", "I love that. I am saving up to adopt a child next year.", id="D1:3"),
]


@pytest.fixture
def mem(open_memory) -> ReflectiveMemory:
    m = open_memory()
    m.add_session(SESSION, user_id="u1", session_id="s1", started_at="2023-05-08T13:00:00")
    return m


# the gate -------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["hi!", "Thanks", "ok", "good morning", "how are you?", "?!"])
def test_rule_gate_skips_small_talk(text):
    decision = RuleGate().decide(text, probe=lambda q: 1.0)
    assert not decision.use_memory
    assert decision.reason == "small talk"


@pytest.mark.parametrize("text", ["Do you remember what I said about my sister?",
                                  "What did we talk about last time?",
                                  "When did I start painting?"])
def test_rule_gate_recalls_on_references_to_the_past(text):
    probed = []
    decision = RuleGate().decide(text, probe=lambda q: probed.append(q) or 0.0)
    assert decision.use_memory
    assert "refers to" in decision.reason
    assert probed == []  # a cue decides without touching the bank


def test_rule_gate_uses_the_probe_threshold():
    gate = RuleGate(threshold=0.5)
    assert gate.decide("What is Caroline painting", probe=lambda q: 0.51).use_memory
    below = gate.decide("What is Caroline painting", probe=lambda q: 0.49)
    assert not below.use_memory
    assert "0.49 < 0.50" in below.reason
    assert not gate.decide("What is Caroline painting").use_memory


@pytest.mark.parametrize(("answer", "expected"), [("YES", True), ("no.", False),
                                                  ("Yes, it needs memory", True)])
def test_llm_gate_follows_the_llm(answer, expected):
    prompts = []
    gate = LLMGate(lambda p: prompts.append(p) or answer)
    decision = gate.decide("Tell me a joke", previous_turn="user: hello")
    assert decision.use_memory is expected
    assert decision.reason.startswith("LLM")
    assert "Tell me a joke" in prompts[0]
    assert "user: hello" in prompts[0]


def test_llm_gate_falls_back_to_rules_on_unclear_or_failing_llm():
    unclear = LLMGate(lambda p: "It depends.").decide("thanks!")
    assert not unclear.use_memory
    assert "LLM unclear; small talk" == unclear.reason

    def broken(prompt: str) -> str:
        raise RuntimeError("server down")

    with pytest.warns(LLMFallbackWarning, match="server down"):
        decision = LLMGate(broken).decide("Do you remember my dog?")
    assert decision.use_memory


# the builder ------------------------------------------------------------------------------------
def cand(mid: str, raw_words: int, summary: str | None, refs=None) -> Candidate:
    raw = " ".join(f"w{mid}{i}" for i in range(raw_words))
    return Candidate(mid, raw, summary, tuple(refs or [f"{mid}:1"]))


def test_builder_keeps_short_raw_turns_and_summarises_long_ones():
    builder = ContextBuilder(budget=100, long_raw=30, unit="words")
    built = builder.build("anything", [cand("a", 20, "short a"), cand("b", 60, "short b")])
    forms = {i.memory_id: i.form for i in built.items}
    assert forms == {"a": "raw", "b": "summary"}
    assert built.cost == 20 + 2 == count_words(built.text)
    assert "short b" in built.text
    assert "wb0" not in built.text


def test_builder_uses_raw_when_the_summary_lacks_what_the_query_asks():
    builder = ContextBuilder(budget=100, long_raw=10, unit="words")
    raw = "Caroline adopted a dog named Rex in June " + "and more words " * 5
    c = Candidate("a", raw, "Caroline got a pet.", ("a:1",))
    built = builder.build("What is the name of Caroline's dog Rex?", [c])
    assert built.items[0].form == "raw"
    assert "summary would not do" in built.items[0].reason
    # same memory, a query the summary answers
    built = builder.build("Does Caroline have a pet?", [c])
    assert built.items[0].form == "summary"


def test_builder_drops_over_budget_and_always_keeps_the_previous_turn():
    builder = ContextBuilder(budget=30, long_raw=100, unit="words")
    built = builder.build("q", [cand("a", 20, None), cand("b", 20, None), cand("c", 5, None)],
                          previous_turn="Melanie: see you at the lake")
    assert [i.form for i in built.items] == ["raw", "dropped", "dropped"]
    assert built.items[1].reason == "over budget (20 > 4 left)"
    assert built.text.endswith("Previous turn:\nMelanie: see you at the lake")
    assert built.cost == 26 <= 30
    tiny = ContextBuilder(budget=2, unit="words").build("q", [cand("a", 5, None)],
                                                        previous_turn="a long previous turn")
    assert tiny.flash == "a long previous turn"
    assert tiny.used == []


def test_builder_does_not_pay_twice_for_the_same_turns():
    built = ContextBuilder(budget=100, unit="words").build(
        "q", [cand("a", 5, None, ["t1", "t2"]), cand("b", 3, None, ["t2", "t1"])])
    assert built.items[1].form == "dropped"
    assert "already in context" in built.items[1].reason
    assert built.refs == ["t1", "t2"]


def test_builder_rejects_bad_settings():
    with pytest.raises(InvalidInputError):
        ContextBuilder(budget=0)
    with pytest.raises(InvalidInputError, match="tokens"):
        ContextBuilder(unit="pages")


def test_llm_judge_decides_summary_or_raw():
    builder = ContextBuilder(budget=100, long_raw=5, unit="words",
                             judge=LLMSummaryJudge(lambda p: "NO"))
    assert builder.build("q", [cand("a", 20, "gist")]).items[0].form == "raw"
    builder.judge = LLMSummaryJudge(lambda p: "YES")
    assert builder.build("q", [cand("a", 20, "gist")]).items[0].form == "summary"
    unclear = LLMSummaryJudge(lambda p: "maybe")
    assert unclear.suffices("dog name", "a pet", "a dog named Rex") is False
    assert OverlapJudge().suffices("dog name", "a dog", "a dog named Rex") is True


def test_candidates_hold_raw_turns_and_a_readable_summary():
    turns = {t.id: t for t in SESSION}
    llm_made = Memory("m1", "u1", "Caroline plans to adopt a child.", "adopt child", ["D1:3"])
    raw_made = Memory("m2", "u1", SESSION[0].render(), "LGBTQ support group powerful", ["D1:1"])
    passage = "Caroline: I went to the LGBTQ support group yesterday"
    part_made = Memory("m3", "u1", passage, "LGBTQ support group", ["D1:1"])
    hits = [MemoryHit(m, 1.0, m.text, i) for i, m in enumerate([llm_made, raw_made, part_made])]
    first, second, third = candidates_from(hits, turns)
    assert first.raw == SESSION[2].render()
    assert first.summary == llm_made.text
    assert second.raw == SESSION[0].render()
    assert second.summary is None
    assert third.raw == SESSION[0].render()
    assert third.summary == passage


# through the public API ---------------------------------------------------------------------------
def test_recall_skips_retrieval_when_the_gate_says_no(mem, monkeypatch):
    def no_search(*a, **k):
        raise AssertionError("searched although the gate said no")

    monkeypatch.setattr(mem, "search", no_search)
    out = mem.recall("thanks, bye!", user_id="u1", previous_turn=SESSION[-1])
    assert not out.decision.use_memory
    assert out.result is None
    assert out.context.items == []
    assert "search" not in out.seconds
    assert out.text == f"Previous turn:\n{SESSION[-1].render()}"


def test_recall_builds_context_from_the_bank(mem):
    out = mem.recall("What did Caroline think of the support group?", user_id="u1",
                     previous_turn="Melanie: how was your week?", budget=200)
    assert out.decision.use_memory
    assert "similarity" in out.decision.reason
    assert "support group" in out.text
    assert out.text.endswith("Melanie: how was your week?")
    assert "D1:1" in out.context.refs
    assert out.context.cost <= 200
    assert "[8 May 2023]" in out.text


def test_recall_gate_skips_unrelated_questions(mem):
    out = mem.recall("What is the boiling point of water in Kelvin?", user_id="u1")
    assert not out.decision.use_memory
    assert out.result is None


def test_recall_with_a_custom_controller_and_validation(mem):
    controller = SCMController(RuleGate(threshold=0.0),
                               ContextBuilder(budget=8, long_raw=100, unit="words"))
    out = mem.recall("support group", user_id="u1", controller=controller)
    assert out.decision.use_memory
    assert all(i.form == "dropped" for i in out.context.items)
    with pytest.raises(InvalidInputError):
        mem.recall(42, user_id="u1")
    with pytest.raises(InvalidInputError):
        mem.recall("hi", user_id="u1", previous_turn=3)
    assert not mem.recall("Do you remember me?", user_id="nobody").context.used


@pytest.mark.slow
def test_context_bench_keeps_the_budget(locomo_path, capsys):
    from rmm_core.bench.context import evaluate
    from rmm_core.bench.locomo import load_locomo

    rows = evaluate(load_locomo(locomo_path, [0]), [500], [60])
    row = rows["500/60"]
    assert row["scm words/q"] <= 500
    assert row["plain words/q"] <= 500
    assert 0 < row["scm raw-only %"] <= row["scm recall %"] <= 100
    assert rows["gate"]["questions passed %"] > rows["gate"]["small talk passed %"]
