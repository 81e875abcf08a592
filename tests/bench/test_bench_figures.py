"""The retrieval bench's added figures: the probe metrics (update first, both sides) on
hand-made rankings, per-category rows, the word-limited passage baselines, and `--markdown`
writing its section between markers. End-to-end runs use a tiny BEAM-format conversation
written here and the real packaged embedder; the BEAM test on real data reads ../shared and
skips when it is absent."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from rmm_core.bench.baselines import UNITS, build_units, word_passages
from rmm_core.bench.beam import load_beam
from rmm_core.bench.metrics import both_sides, update_first
from rmm_core.bench.records import Conversation, Question, Session
from rmm_core.bench.report import markers, write_markdown
from rmm_core.bench.tally import CATEGORIES, NAMES_A_TIME, Tally
from rmm_core.cli import main
from rmm_core.errors import InvalidInputError
from rmm_core.ops.commands import BAD_DATA
from rmm_core.types import Turn

BEAM = Path(__file__).resolve().parents[3] / "shared" / "data" / "beam" / "100K"


def hit(n: int, *refs: str) -> tuple[str, list[str]]:
    return (" ".join(["w"] * n), list(refs))


# --- update first ----------------------------------------------------------------------

def test_an_update_ranked_before_the_original_counts():
    assert update_first([hit(10, "new"), hit(10, "old")], {"old"}, {"new"}) == 1.0
    assert update_first([hit(10, "x"), hit(10, "new")], {"old"}, {"new"}) == 1.0


def test_an_update_ranked_after_the_original_counts_nothing():
    assert update_first([hit(10, "old"), hit(10, "new")], {"old"}, {"new"}) == 0.0


def test_a_missing_update_counts_nothing():
    assert update_first([hit(10, "x"), hit(10, "y")], {"old"}, {"new"}) == 0.0
    assert update_first([], {"old"}, {"new"}) == 0.0
    assert update_first([hit(10, "new")], {"old"}, set()) == 0.0  # probe without its update


def test_a_first_hit_over_the_budget_ends_the_context_even_holding_the_update():
    assert update_first([hit(1001, "new"), hit(10, "new")], {"old"}, {"new"}) == 0.0
    assert update_first([hit(1000, "new")], {"old"}, {"new"}) == 1.0
    # the update fits, but only after a hit that does not: nothing of it is read
    assert update_first([hit(600, "x"), hit(500, "new")], {"old"}, {"new"}) == 0.0


def test_a_hit_holding_both_and_a_turn_on_both_sides_count_as_the_update():
    assert update_first([hit(10, "old", "new")], {"old"}, {"new"}) == 1.0
    assert update_first([hit(10, "same")], {"same"}, {"same"}) == 1.0


# --- both sides --------------------------------------------------------------------------

def test_both_statements_within_the_budget_count():
    assert both_sides([hit(10, "a"), hit(10, "x"), hit(10, "b")], {"a"}, {"b"}) == 1.0
    assert both_sides([hit(10, "a", "b")], {"a", "z"}, {"b"}) == 1.0


def test_one_statement_missing_or_past_the_budget_counts_nothing():
    assert both_sides([hit(10, "a"), hit(10, "x")], {"a"}, {"b"}) == 0.0
    assert both_sides([hit(600, "a"), hit(500, "b")], {"a"}, {"b"}) == 0.0
    assert both_sides([hit(1001, "a", "b")], {"a"}, {"b"}) == 0.0


# --- tallies: per category and per probe ---------------------------------------------------

def question(category: int | str, evidence: set[str], text: str = "q?",
             **sides: set[str]) -> Question:
    return Question(text, "", frozenset(evidence), category,
                    tuple((k, frozenset(v)) for k, v in sides.items()))


def test_a_tally_reports_each_category_and_only_the_probes_it_saw():
    tally = Tally()
    tally.add([hit(10, "new"), hit(10, "old")],
              question("knowledge_update", {"old", "new"}, original_info={"old"},
                       updated_info={"new"}))
    tally.add([hit(10, "old"), hit(10, "new")],
              question("knowledge_update", {"old", "new"}, original_info={"old"},
                       updated_info={"new"}))
    tally.add([hit(10, "x")] * 5 + [hit(10, "g")], question("temporal_reasoning", {"g"}))
    row = tally.row()
    assert (row["update first@1000"], row["update first@1000 probes"]) == (50.0, 2)
    assert "both sides@1000" not in row
    assert list(row[CATEGORIES]) == ["knowledge_update", "temporal_reasoning"]
    assert row[CATEGORIES]["knowledge_update"] == {
        "questions": 2, "R_any@5": 100.0, "Rtok@1000": 100.0, "Rtok@2000": 100.0}
    assert row[CATEGORIES]["temporal_reasoning"]["R_any@5"] == 0.0  # gold is 6th
    assert row[CATEGORIES]["temporal_reasoning"]["Rtok@1000"] == 100.0
    assert row["R_any@5"] == pytest.approx(200 / 3)


def test_numbered_categories_come_in_number_order():
    tally = Tally()
    for category in (10, 2, 1):
        tally.add([hit(5, "g")], question(category, {"g"}))
    assert list(tally.row()[CATEGORIES]) == ["1", "2", "10"]


def test_questions_naming_a_time_get_a_row_of_their_own_after_the_categories():
    tally = Tally()
    tally.add([hit(5, "g")], question(2, {"g"}, text="What did she paint in October 2023?"))
    tally.add([hit(5, "x")], question(1, {"g"}, text="What did she paint?"))
    row = tally.row()
    assert list(row[CATEGORIES]) == ["1", "2", NAMES_A_TIME]
    assert row[CATEGORIES][NAMES_A_TIME]["questions"] == 1
    assert row[CATEGORIES][NAMES_A_TIME]["R_any@5"] == 100.0


# --- passage baselines -------------------------------------------------------------------

def conversation(*texts: str) -> Conversation:
    turns = [Turn("assistant" if i % 2 else "user", text, str(i)) for i, text in
             enumerate(texts)]
    return Conversation("c", ("user", "assistant"), [Session("s1", datetime(2024, 1, 1), turns)],
                        [])


@pytest.mark.parametrize("unit,limit", [("p60", 60), ("p100", 100)])
def test_passages_keep_to_the_word_limit_and_refer_to_their_turn_only(unit, limit):
    texts = [" ".join(f"a{i}" for i in range(250)), "short reply", " ".join(["b"] * limit),
             " ".join(["c"] * (limit - 1))]
    conv = conversation(*texts)
    cut = UNITS[unit](conv)
    assert all(len(text.split()) <= limit for text, _ in cut)
    assert all(len(refs) == 1 for _, refs in cut)
    for turn in conv.sessions[0].turns:
        pieces = [text for text, refs in cut if refs == [turn.id]]
        # the turn's words, in order, each once; every passage headed by the speaker
        assert all(p.startswith(f"{turn.speaker}: ") for p in pieces)
        assert " ".join(p.split(" ", 1)[1] for p in pieces).split() == turn.text.split()
    assert len([r for _, r in cut if r == ["0"]]) == -(-250 // (limit - 1))
    assert len([r for _, r in cut if r == ["2"]]) == 2  # speaker + limit words do not fit
    assert len([r for _, r in cut if r == ["3"]]) == 1  # speaker + limit - 1 words fit


def test_unknown_units_are_refused_with_the_choices(embedder, capsys):
    with pytest.raises(InvalidInputError, match="p60"):
        build_units(conversation("hello"), "p80", embedder)
    tiny = Path(__file__).parents[1] / "data" / "conversations.jsonl"
    assert main(["bench", "retrieval", "--dataset", "jsonl", "--data", str(tiny),
                 "--baselines", "turn,p80"]) == BAD_DATA
    assert "p80" in capsys.readouterr().err


def test_passages_of_real_beam_messages_keep_to_60_words():
    if not (BEAM / "1" / "chat.json").is_file():
        pytest.skip("../shared/data/beam/100K is absent (it ships beside CI's clone, not with "
                    "the package)")
    (conv,) = load_beam(BEAM, [0])
    cut = word_passages(conv, 60)
    turns = {t.id: t for s in conv.sessions for t in s.turns}
    assert max(len(text.split()) for text, _ in cut) == 60
    assert sum(len(text.split()) - 1 for text, _ in cut) == sum(
        len(t.text.split()) for t in turns.values())
    ku = next(q for q in conv.questions if q.category == "knowledge_update")
    assert (ku.side("original_info"), ku.side("updated_info")) == ({"86"}, {"114"})


# --- the bench end to end on a tiny BEAM-format conversation ------------------------------

def tiny_beam(folder: Path) -> Path:
    """One BEAM-format conversation: a budget that changes, and two statements that clash."""
    messages = ["My monthly budget for the trip is 800 dollars.",
                "Noted: 800 dollars a month.",
                "I never drink coffee, it keeps me awake.",
                "Understood, no coffee.",
                "Update: my monthly budget for the trip is now 1200 dollars.",
                "Got it, the budget is 1200 dollars.",
                "I had three coffees this morning at the station.",
                "Sounds like a busy morning."]
    turns = [[{"role": "user" if i % 2 == 0 else "assistant", "id": i, "content": text}
              for i, text in enumerate(messages)][j:j + 2] for j in range(0, 8, 2)]
    turns[0][0]["time_anchor"] = "March-15-2024"
    chat = [{"batch_number": 1, "time_anchor": "March-15-2024", "turns": turns}]
    probes = {
        "knowledge_update": [{"question": "What is my monthly trip budget?",
                              "answer": "1200 dollars",
                              "source_chat_ids": {"original_info": [0], "updated_info": [4]}}],
        "contradiction_resolution": [{"question": "Do I drink coffee?",
                                      "source_chat_ids": {"first_statement": [2],
                                                          "second_statement": [6]}}],
        "information_extraction": [{"question": "What did I have at the station?",
                                    "answer": "three coffees", "source_chat_ids": [6]}],
    }
    conv = folder / "1"
    conv.mkdir(parents=True)
    (conv / "chat.json").write_text(json.dumps(chat))
    (conv / "probing_questions.json").write_text(json.dumps(probes))
    return folder


def test_bench_prints_probes_and_categories_and_writes_a_markdown_section(tmp_path, capsys):
    data, page, rows_path = tiny_beam(tmp_path / "beam"), tmp_path / "page.md", tmp_path / "r.json"
    page.write_text("# Benchmarks\n\nHow to run.\n\n" + "\n".join(markers("beam"))
                    + "\n\nAfter.\n")
    argv = ["bench", "retrieval", "--dataset", "beam", "--data", str(data),
            "--baselines", "turn,p60", "--markdown", str(page), "--json", str(rows_path)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert re.search(r"update first@1000 \(1 probes\)\s+both sides@1000 \(1 probes\)", printed)
    assert re.search(r"^p60/fused\s+\d+\.\d\s+\d+\.\d$", printed, re.M)
    rows = json.loads(rows_path.read_text())
    assert set(rows) == {"rmm (default)", *(f"{u}/{r}" for u in ("turn", "p60")
                                            for r in ("bm25", "dense", "fused"))}
    assert set(rows["turn/bm25"][CATEGORIES]) == {
        "contradiction_resolution", "information_extraction", "knowledge_update"}
    # everything fits in 1,000 words here: both statements are always in context
    assert all(row["both sides@1000"] == 100.0 for row in rows.values())

    text = page.read_text()
    begin, end = markers("beam")
    assert text.startswith("# Benchmarks\n\nHow to run.\n\n" + begin)
    assert text.endswith(end + "\n\nAfter.\n")
    section = text[text.index(begin):text.index(end)]
    assert f"`rmm bench retrieval --dataset beam --data {data} --baselines turn,p60`" in section
    assert re.search(r"reflective-memory \S+; \d+ cores, [\d.]+ GiB, CPU ", section)
    assert "| **rmm (default)** |" in section
    assert "| knowledge_update | 1 |" in section
    assert "update first@1000 (1 probes)" in section

    assert main(argv[:-2]) == 0  # a rerun replaces the section, the prose stays
    again = page.read_text()
    assert again.count(begin) == 1
    assert again.count(end) == 1
    assert again.startswith("# Benchmarks\n\nHow to run.\n\n")
    assert again.endswith("After.\n")


def test_markdown_appends_a_new_section_and_creates_a_missing_file(tmp_path):
    page = tmp_path / "new.md"
    write_markdown(page, "beam", "\n".join(markers("beam")))
    write_markdown(page, "locomo", "\n".join([markers("locomo")[0], "figures",
                                              markers("locomo")[1]]))
    write_markdown(page, "locomo", "\n".join([markers("locomo")[0], "new figures",
                                              markers("locomo")[1]]))
    text = page.read_text()
    assert text.index(markers("beam")[1]) < text.index(markers("locomo")[0])
    assert "new figures" in text
    assert "\nfigures" not in text
