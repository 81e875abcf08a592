"""The retrieval bench: its dataset loaders (LoCoMo, BEAM, the generic JSON Lines format), the
strict word-budget metric, and `rmm bench retrieval` end to end on the shipped tiny file.

LoCoMo and BEAM tests read ../shared/data and skip when it is absent. `test_ingest_feeds_...`
uses a recording stand-in for the memory (it only checks what `ingest` passes); every other
test that ingests uses the real memory and the real packaged embedder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rmm_core import ReflectiveMemory
from rmm_core.bench.beam import load_beam
from rmm_core.bench.datasets import LOADERS, load
from rmm_core.bench.jsonl import load_jsonl
from rmm_core.bench.locomo import load_locomo
from rmm_core.bench.metrics import METRICS, r_tok, score_question, words_in
from rmm_core.bench.records import ingest
from rmm_core.bench.retrieval import rank_product
from rmm_core.cli import main
from rmm_core.errors import InvalidInputError
from rmm_core.ops.commands import BAD_DATA

TINY = Path(__file__).parents[1] / "data" / "conversations.jsonl"
BEAM = Path(__file__).resolve().parents[3] / "shared" / "data" / "beam" / "100K"


def words(n: int) -> str:
    return " ".join(["w"] * n)


# --- the strict budget metric ------------------------------------------------------------

def test_a_unit_larger_than_the_budget_counts_nothing():
    ranked = [(words(1001), ["g"]), (words(10), ["g"])]
    assert r_tok(ranked, {"g"}, 1000) == 0.0
    assert words_in(ranked, 1000) == 0
    assert r_tok(ranked, {"g"}, 1001) == 1.0


def test_units_that_fit_exactly_all_count():
    ranked = [(words(400), ["a"]), (words(600), ["b"]), (words(1), ["c"])]
    assert r_tok(ranked, {"a", "b"}, 1000) == 1.0
    assert words_in(ranked, 1000) == 1000
    assert r_tok(ranked, {"c"}, 1000) == 0.0


def test_a_unit_that_does_not_fit_ends_the_list_even_if_a_later_one_would():
    ranked = [(words(300), ["a"]), (words(800), ["b"]), (words(5), ["c"])]
    assert r_tok(ranked, {"a", "c"}, 1000) == 0.5
    assert words_in(ranked, 1000) == 300


def test_rank_order_decides_what_fits():
    big, gold = (words(600), ["x"]), (words(500), ["g"])
    assert r_tok([big, gold], {"g"}, 1000) == 0.0
    assert r_tok([gold, big], {"g"}, 1000) == 1.0


def test_the_table_reports_every_budget_up_to_4000():
    scores = score_question([(words(3000), ["g"])], {"g"})
    assert {f"Rtok@{b}" for b in (500, 1000, 2000, 4000)} <= set(METRICS) == set(scores)
    assert (scores["Rtok@2000"], scores["Rtok@4000"]) == (0.0, 1.0)


# --- the generic JSON Lines format ---------------------------------------------------------

def test_jsonl_reads_the_shipped_example():
    ana, raj = load_jsonl(TINY)
    assert (ana.sample_id, raj.sample_id) == ("ana", "raj")
    assert [s.session_id for s in ana.sessions] == ["s1", "s2"]
    assert ana.sessions[1].started_at.isoformat() == "2024-04-02T18:05:00"
    assert [t.id for t in ana.sessions[0].turns] == ["1", "2", "3"]
    assert ana.sessions[0].turns[0].speaker == "Ana"
    assert ana.speakers == ("Ana", "Ben")
    assert [sorted(q.evidence) for q in ana.questions] == [["1"], ["4", "6"]]
    assert ana.questions[0].answer == "Biscuit"
    assert ana.questions[1].category == "multi-hop"
    assert (ana.skipped, raj.skipped) == (1, 0)  # the question without evidence is left out
    assert [c.sample_id for c in load("jsonl", TINY, [1])] == ["raj"]


SESSION = {"conversation": "a", "session": "s1",
           "turns": [{"id": "1", "speaker": "x", "text": "hello there"}]}
OTHER = {**SESSION, "session": "s2"}
BAD_LINES = {
    "not JSON": ("{oops", "not JSON"),
    "neither kind": ({"conversation": "a"}, "`turns`"),
    "both kinds": ({**OTHER, "question": "q?"}, "`turns`"),
    "unknown field": ({**OTHER, "user": "a"}, "user"),
    "bad date": ({**OTHER, "date": "someday"}, "date"),
    "no turns": ({**OTHER, "turns": []}, "turns"),
    "turn without id": ({**OTHER, "turns": [{"speaker": "x", "text": "hi"}]}, "without an id"),
    "numeric turn id": ({**OTHER, "turns": [{"id": 2, "speaker": "x", "text": "hi"}]}, "id"),
    "empty text": ({**OTHER, "turns": [{"id": "2", "speaker": "x", "text": " "}]}, "empty"),
    "repeated turn id": (OTHER, "turn id '1' repeats"),
    "repeated session": ({**SESSION, "turns": [{"id": "9", "speaker": "x", "text": "hi"}]},
                         "session 's1' repeats"),
    "unknown evidence": ({"conversation": "a", "question": "q?", "evidence": ["7"]}, "['7']"),
    "evidence not a list": ({"conversation": "a", "question": "q?", "evidence": "1"},
                            "evidence"),
    "unknown conversation": ({"conversation": "b", "question": "q?", "evidence": ["1"]},
                             "'b' has no session"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_bad_jsonl_is_a_typed_error_naming_the_line(case, tmp_path):
    line, expected = BAD_LINES[case]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([json.dumps(SESSION), "",
                               line if isinstance(line, str) else json.dumps(line)]) + "\n")
    with pytest.raises(InvalidInputError, match="line 3: ") as err:
        load_jsonl(path)
    assert expected in str(err.value)


def test_registry_names_its_datasets_and_checks_positions():
    with pytest.raises(InvalidInputError, match=r"\['beam', 'jsonl', 'locomo'\]"):
        load("csv", TINY)
    with pytest.raises(InvalidInputError, match="position"):
        load("jsonl", TINY, [2])
    assert set(LOADERS) == {"locomo", "beam", "jsonl"}


def test_ingest_feeds_each_session_as_one_add_session():
    class Recorder:
        def __init__(self):
            self.calls = []

        def add_session(self, turns, **kwargs):
            self.calls.append(([t.id for t in turns], kwargs))

    mem, (ana, _) = Recorder(), load_jsonl(TINY)
    ingest(mem, ana)
    assert [c[0] for c in mem.calls] == [["1", "2", "3"], ["4", "5", "6"]]
    assert mem.calls[0][1] == {"user_id": "ana", "session_id": "s1",
                               "started_at": ana.sessions[0].started_at}


def test_rank_product_goes_deep_enough_to_fill_the_largest_budget(embedder):
    mem = ReflectiveMemory.open(":memory:", embedder=embedder, progress=False,
                                search={"candidates": 1})
    ana = load_jsonl(TINY)[0]
    ingest(mem, ana)
    ranked = rank_product(mem, "ana", ana.questions[0].question)
    assert len(ranked) == len(mem.memories(user_id="ana")) > 1
    mem.close()


def test_bench_retrieval_runs_on_the_shipped_jsonl(capsys, tmp_path):
    out = tmp_path / "rows.json"
    code = main(["bench", "retrieval", "--dataset", "jsonl", "--data", str(TINY),
                 "--baselines", "turn,session", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "2 conversations, 3 questions with gold evidence (1 left out" in printed
    rows = json.loads(out.read_text())
    assert set(rows) == {"rmm (default)", *(f"{u}/{r}" for u in ("turn", "session")
                                            for r in ("bm25", "dense", "fused"))}
    assert {"words/hit p50", "words/hit p95", "Rtok@4000"} <= set(rows["turn/bm25"])
    assert rows["turn/bm25"]["words/hit p95"] <= 14  # the longest turn has 14 words
    # ingest speed comes with the embedder's own pace on the same passages, same run
    assert rows["rmm (default)"]["embedder words/s"] > 0
    assert re.search(r"the embedder alone on passages of the same turns, this run: \d+ "
                     r"words/s, ratio \d+\.\d\d\)", printed)


def test_bench_rejects_bad_jsonl_with_the_line(capsys, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(SESSION) + "\n{oops\n")
    assert main(["bench", "locomo", "--dataset", "jsonl", "--data", str(path)]) == BAD_DATA
    assert "line 2: not JSON" in capsys.readouterr().err


# --- LoCoMo and BEAM, read in place from ../shared ----------------------------------------

@pytest.fixture
def beam_path() -> Path:
    if not (BEAM / "1" / "chat.json").is_file():
        pytest.skip("../shared/data/beam/100K is absent (it ships beside CI's clone, not with "
                    "the package)")
    return BEAM


def test_locomo_loader_keeps_the_resolvable_questions(locomo_path):
    convs = load("locomo", locomo_path)
    assert len(convs) == 5
    assert sum(len(c.questions) for c in convs) == 760  # as in BASELINES.md
    raw = json.loads(locomo_path.read_text())
    assert sum(c.skipped for c in convs) == sum(len(s["qa"]) for s in raw) - 760
    first = convs[0].sessions[0]
    assert first.turns[0].id == "D1:1"
    assert first.started_at is not None
    assert all(q.category in (1, 2, 3, 4) for c in convs for q in c.questions)
    assert [c.sample_id for c in load_locomo(locomo_path, [1])] == [convs[1].sample_id]


def test_beam_loader_reads_batches_as_dated_sessions(beam_path):
    convs = load("beam", beam_path)
    assert [c.sample_id for c in convs] == [f"beam-{n}" for n in range(1, 11)]
    turns = [t for c in convs for s in c.sessions for t in s.turns]
    assert len(turns) == 2432  # as in BASELINES.md
    assert not [t for t in turns if "->->" in t.text]
    assert {t.speaker for t in turns} == {"user", "assistant"}
    assert sum(len(c.questions) for c in convs) == 179
    assert sum(c.skipped for c in convs) == 21  # 20 abstention + 1 without evidence
    first = convs[0]
    assert [s.session_id for s in first.sessions] == ["batch_1", "batch_2", "batch_3"]
    assert first.sessions[0].started_at.date().isoformat() == "2024-03-15"
    assert first.sessions[0].turns[0].id == "0"
    known = {t.id for s in first.sessions for t in s.turns}
    assert all(q.evidence <= known for q in first.questions)
    # a dict of id lists (original and updated information) is flattened
    assert any(len(q.evidence) > 1 for q in first.questions
               if q.category == "knowledge_update")


def test_beam_loader_reads_one_conversation_directory(beam_path):
    (one,) = load_beam(beam_path / "3")
    assert one.sample_id == "beam-3"
    assert one.questions == load_beam(beam_path, [2])[0].questions


def test_the_benchmarks_page_example_is_valid_jsonl(tmp_path):
    page = (Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md").read_text()
    example = page.split("```json\n", 1)[1].split("```", 1)[0]
    (tmp_path / "example.jsonl").write_text(example)
    (conv,) = load_jsonl(tmp_path / "example.jsonl")
    assert conv.questions[0].evidence == {"1"}
