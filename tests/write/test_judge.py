"""The LLM judge of supersession: parsing its verdicts, and what it does to the rules'
findings. The LLM is `rmm_core.testing.ScriptedLLM` (a scripted fake: these test parsing and
flow, not the judgement)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from rmm_core.errors import InvalidInputError, LLMError
from rmm_core.models.parse import ParseError
from rmm_core.testing import ScriptedLLM
from rmm_core.types import FactChange, Memory
from rmm_core.write.judge import ChangeJudge, parse_verdicts


def test_verdicts_are_read_one_line_per_pair():
    answer = "P1: supersedes\n**P2: none**\nP3 - Conflicts (both cannot hold)\nnoise"
    assert parse_verdicts(answer, 3) == {0: "supersedes", 1: "none", 2: "conflicts"}


def test_lines_for_pairs_not_asked_are_ignored_and_no_verdict_at_all_is_a_parse_error():
    assert parse_verdicts("P1: supersedes\nP2: none\nP3: none", 1) == {0: "supersedes"}
    with pytest.raises(ParseError, match="P4 is not a pair"):
        parse_verdicts("P4: none", 3)
    with pytest.raises(ParseError, match="no verdict for P1 to P3"):
        parse_verdicts("They all look fine to me.", 3)


def _memory(mid: str, text: str, day: int) -> Memory:
    return Memory(id=mid, user_id="u", text=text, key=text, refs=[mid],
                  occurred_at=datetime(2024, 3, day, tzinfo=timezone.utc))


MEMORIES = {m.id: m for m in (
    _memory("home", "user: I live in Lisbon.", 1),
    _memory("quota", "user: My API quota is 1,000 calls a day.", 2),
    _memory("moved", "user: Big news, I moved to Berlin.", 10),
    _memory("calls", "user: How do I track 1,200 calls a day in my app?", 11),
)}
RULES = [FactChange("home", "moved", MEMORIES["moved"].valid_from, "supersedes", None,
                    "Big news, I moved to Berlin.", ("subject", "attribute", "cue", "value"))]
NEAREST = {"moved": ["home"], "calls": ["quota"]}


def test_the_judge_confirms_the_rules_and_finds_what_they_passed_over():
    llm = ScriptedLLM(judge_changes=["P1: supersedes\nP2: supersedes"])
    changes = ChangeJudge(llm)(RULES, NEAREST, MEMORIES)
    assert [(c.old_id, c.new_id, c.kind) for c in changes] == [
        ("home", "moved", "supersedes"), ("quota", "calls", "supersedes")]
    assert changes[0].by == "Big news, I moved to Berlin."
    assert changes[1].by == MEMORIES["calls"].text
    assert changes[1].signals == ("llm",)
    [call] = llm.calls
    assert "EARLIER (1 March 2024): user: I live in Lisbon." in call.prompt
    assert "LATER (11 March 2024): user: How do I track 1,200 calls" in call.prompt


def test_the_judge_can_overrule_the_rules_and_a_pair_it_skips_keeps_their_verdict():
    overruled = ChangeJudge(ScriptedLLM(judge_changes=["P1: none\nP2: conflicts"]))(
        RULES, NEAREST, MEMORIES)
    assert [(c.old_id, c.kind) for c in overruled] == [("quota", "conflicts")]
    skipped = ChangeJudge(ScriptedLLM(judge_changes=["P2: none"]))(RULES, NEAREST, MEMORIES)
    assert skipped == RULES


def test_without_an_answer_the_rules_stand():
    llm = ScriptedLLM(judge_changes=[LLMError("the server is down")])
    with pytest.warns(Warning, match="supersession judge failed"):
        assert ChangeJudge(llm)(RULES, NEAREST, MEMORIES) == RULES


def test_nothing_to_judge_makes_no_call():
    llm = ScriptedLLM(judge_changes=["P1: none"])
    assert ChangeJudge(llm)([], {}, MEMORIES) == []
    assert llm.calls == []


@pytest.mark.parametrize(("verdict", "superseded"), [("supersedes", True), ("none", False)])
def test_on_add_the_judges_verdict_decides(open_memory, verdict, superseded):
    llm = ScriptedLLM(judge_changes=[f"P1: {verdict}"])
    mem = open_memory(llm=llm, stages={"judge_changes": True})
    old = mem.add("I live in Lisbon, near the river.", user_id="ana",
                  occurred_at="2024-01-10")[0]
    new = mem.add("These days home is a small flat in Berlin, near the river.",
                  user_id="ana", occurred_at="2024-06-15")[0]
    assert [c.task for c in llm.calls] == ["judge_changes"]
    assert "I live in Lisbon" in llm.calls[0].prompt
    assert mem.get(old.id, user_id="ana").current is not superseded
    assert new.supersedes == ([old.id] if superseded else [])


def test_switching_the_judge_on_without_an_llm_is_refused(open_memory):
    with pytest.raises(InvalidInputError, match="judge_changes needs an LLM"):
        open_memory(stages={"judge_changes": True})


def test_the_judge_reads_a_change_no_cue_word_marks(open_memory):
    """Every new memory's nearest earlier ones go to the judge, not only those the rules'
    change words flag: "first week at the bank" says no "moved", "now" or "anymore"."""
    llm = ScriptedLLM(judge_changes=["P1: supersedes"])
    mem = open_memory(llm=llm, stages={"judge_changes": True})
    old = mem.add("I'm a barista at Blue Bottle downtown.", user_id="ana",
                  occurred_at="2024-01-10")[0]
    mem.add("First week at the bank went great, the suit still feels weird.", user_id="ana",
            occurred_at="2024-06-15")
    assert [c.task for c in llm.calls] == ["judge_changes"]
    assert "barista at Blue Bottle" in llm.calls[0].prompt
    assert not mem.get(old.id, user_id="ana").current


@pytest.mark.parametrize("judged", [True, False], ids=["judge", "no judge"])
def test_with_a_judge_its_verdict_replaces_the_read_time_guess(open_memory, judged):
    """With the judge on, a pair it read as no change leaves the older memory current in
    search too; without it, the read-time step takes a later statement that answers the
    question in other words for a newer version (the guess the judge replaces)."""
    llm = ScriptedLLM(judge_changes=["P1: none"])
    mem = open_memory(**({"llm": llm, "stages": {"judge_changes": True}} if judged else {}))
    mem.add("I'm a barista at Blue Bottle downtown.", user_id="ana", occurred_at="2024-01-10")
    mem.add("Three weeks into the bank job, I don't miss the coffee shop rush at all.",
            user_id="ana", occurred_at="2024-06-15")
    hits = list(mem.search("Where do I work?", user_id="ana", k=2))
    barista = next(h for h in hits if "barista" in h.memory.text)
    assert (barista.current is not False) is judged


@pytest.mark.parametrize("judged", [True, False], ids=["judge", "no judge"])
def test_a_later_mention_of_the_car_leaves_it_current(open_memory, judged):
    """A later message that names the car and says nothing ended ("corolla's at the
    mechanic again") is a mention, not a new version: no mark with or without a judge."""
    llm = ScriptedLLM(judge_changes=["P1: none"])
    mem = open_memory(**({"llm": llm, "stages": {"judge_changes": True}} if judged else {}))
    mem.add("I drive a 2015 Toyota Corolla and just hit 100k miles.", user_id="ana",
            occurred_at="2024-01-10")
    mem.add("corolla's at the mechanic again so I'm driving a loaner Camry from the "
            "dealership, the seats are SO much nicer lol", user_id="ana", occurred_at="2024-06-15")
    hits = list(mem.search("What car do I drive?", user_id="ana", k=2))
    corolla = next(h for h in hits if h.memory.text.startswith("I drive"))
    assert corolla.current is not False
    assert corolla.memory.current
    assert hits[0] is corolla


def test_with_a_judge_a_change_it_found_comes_first_in_search(open_memory):
    """What the judge recorded orders search as the read-time step would: the successor of
    an answer comes before it when it answers the question too, though the question shares
    no word with what changed."""
    llm = ScriptedLLM(judge_changes=["P1: supersedes"])
    mem = open_memory(llm=llm, stages={"judge_changes": True})
    mem.add("I live in Leeds, in a flat with the worst damp problem", user_id="ana",
            occurred_at="2024-01-10")
    mem.add("Honestly the best part of Glasgow so far is that the landlord actually fixes "
            "things", user_id="ana", occurred_at="2024-06-15")
    hits = list(mem.search("Where do I live?", user_id="ana", k=2))
    assert hits[0].memory.text.startswith("Honestly the best part of Glasgow")
    assert not hits[1].memory.current


def test_the_judge_is_not_shown_small_talk_beside_a_fact(open_memory):
    """An earlier memory far from the new one (cosine below `JUDGED`) is no pair for the
    judge: a question about pancakes is no version of where one works."""
    llm = ScriptedLLM(judge_changes=["P1: supersedes"])
    mem = open_memory(llm=llm, stages={"judge_changes": True})
    old = mem.add("I'm a barista at Blue Bottle downtown.", user_id="ana",
                  occurred_at="2024-01-10")[0]
    mem.add("what's a good substitute for buttermilk in pancakes", user_id="ana",
            occurred_at="2024-03-02")
    assert llm.calls == []
    assert mem.get(old.id, user_id="ana").current
