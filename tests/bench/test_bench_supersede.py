"""`rmm bench supersede`: the command on the packaged set with the real embedder, its
figures' arithmetic, and the through-search mode on the packaged update cases."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rmm_core.bench.supersede import auroc, best_threshold, load_pairs, prf
from rmm_core.bench.supersede_search import FIGURES, composition, load_cases, markdown
from rmm_core.bench.supersede_search import evaluate as evaluate_cases
from rmm_core.cli import main
from rmm_core.errors import InvalidInputError
from rmm_core.models.embed import default_embedder
from rmm_core.write.supersede import SIGNALS


def in_unit(figures: dict) -> bool:
    return all(0.0 <= figures[m] <= 1.0 for m in ("precision", "recall", "f1"))


def test_the_command_prints_and_writes_every_figure(tmp_path, capsys):
    out = tmp_path / "supersede.json"
    assert main(["bench", "supersede", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "AUROC" in printed
    assert "without cue" in printed
    figures = json.loads(out.read_text())
    assert {"pairs", "labels", "supersedes", "conflicts", "confusion", "part", "ablation",
            "similarity"} <= set(figures)
    assert figures["pairs"] == sum(figures["labels"].values()) == sum(
        sum(row.values()) for row in figures["confusion"].values())
    assert set(figures["ablation"]) == set(SIGNALS)
    rows = [figures["supersedes"], figures["conflicts"], figures["part"],
            figures["similarity"]["best_threshold"],
            *(row[k] for row in figures["ablation"].values() for k in ("supersedes",
                                                                        "conflicts"))]
    assert all(in_unit(row) for row in rows)
    assert 0.0 <= figures["similarity"]["auroc"] <= 1.0


def test_auroc_counts_ties_as_half_and_matches_the_pairwise_definition():
    assert auroc(np.array([0.9, 0.8]), np.array([0.1, 0.8])) == pytest.approx(3.5 / 4)
    rng = np.random.default_rng(0)
    pos, neg = rng.integers(0, 5, 30).astype(float), rng.integers(0, 5, 40).astype(float)
    pairwise = np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])
    assert auroc(pos, neg) == pytest.approx(pairwise)


def test_the_best_threshold_is_the_one_with_the_best_f1():
    values = np.array([0.9, 0.7, 0.6, 0.2])
    gold = np.array([True, True, False, False])
    threshold, figures = best_threshold(values, gold)
    assert threshold == 0.7
    assert figures == prf(2, 2, 2)


def test_a_malformed_pair_names_its_line(tmp_path):
    good = {"id": "a", "old": {"text": "I live in Rome.", "speaker": "user", "date": "2024-01-01"},
            "new": {"text": "I moved to Oslo.", "speaker": "user", "date": "2024-02-01"},
            "label": "supersedes"}
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "label": "maybe"}) + "\n")
    with pytest.raises(InvalidInputError, match=r"set\.jsonl:2"):
        load_pairs(path)
    path.write_text(json.dumps(good) + "\n")
    assert [p.label for p in load_pairs(path)] == ["supersedes"]


# --through-search: the packaged cases, run through add_session and search -------------------

def test_the_packaged_cases_load_and_hold_the_proportions_the_set_promises():
    cases = load_cases()
    comp = composition(cases)
    assert comp["changes"] >= 300
    assert len(comp["kinds"]) >= 12
    assert comp["implicit_share"] >= 0.15
    assert comp["non_english_share"] >= 0.10
    assert {"de", "fr", "es"} <= set(comp["langs"])
    assert comp["non_change_share"] >= 0.20
    assert comp["past_questions"] >= 25
    for case in cases:
        dates = [when for when, _ in case.sessions]
        assert "2023-01-01" <= dates[0] < dates[1] < dates[2] <= "2025-12-31", case.id
        assert all(1 <= len(turns) <= 6 for _, turns in case.sessions), case.id


def _row(**changes) -> dict:
    row = {"id": "x1", "kind": "job", "lang": "en", "change": True, "implicit": False,
           "partial": False, "non_change": None,
           "sessions": [{"date": d, "turns": [{"id": f"x1-s{n}-t1", "speaker": "user",
                                                "text": text}]}
                        for n, (d, text) in enumerate([
                            ("2024-01-10", "I work as a nurse at St Mary's hospital."),
                            ("2024-02-10", "What's a good recipe for banana bread?"),
                            ("2024-06-10", "I quit the hospital. I work as a pilot at "
                                           "KLM now, flying from Amsterdam.")], 1)],
           "question": "Where do I work?", "fact": ["x1-s1-t1"], "update": ["x1-s3-t1"],
           "current": ["x1-s3-t1"],
           "past": {"question": "Where did I work in March 2024?", "as_of": "2024-03-01"}}
    return {**row, **changes}


@pytest.mark.parametrize("bad, error", [
    ({"colour": "red"}, "unknown field"),
    ({"current": ["x1-s1-t1"]}, "current"),
    ({"fact": ["x1-s3-t1"]}, "first session"),
    ({"non_change": "visit"}, "non_change"),
    ({"past": {"question": "Where?", "as_of": "2024-07-01"}}, "as_of"),
])
def test_a_case_that_breaks_the_schema_names_its_line_and_what_is_wrong(tmp_path, bad, error):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(_row()) + "\n" + json.dumps(_row(**bad)) + "\n")
    with pytest.raises(InvalidInputError, match=rf"cases\.jsonl:2: .*{error}"):
        load_cases(path)
    path.write_text(json.dumps(_row()) + "\n{not json\n")
    with pytest.raises(InvalidInputError, match=r"cases\.jsonl:2"):
        load_cases(path)


def test_an_obvious_change_counts_as_current_first_through_search(tmp_path, capsys):
    data, out = tmp_path / "cases.jsonl", tmp_path / "figures.json"
    data.write_text(json.dumps(_row()) + "\n")
    assert main(["bench", "supersede", "--through-search", "--data", str(data),
                 "--json", str(out)]) == 0
    assert "current first" in capsys.readouterr().out
    figures = json.loads(out.read_text())
    assert figures["outcomes"][0]["current_first"] is True
    assert figures["groups"]["changes"]["current_first"] == 100.0


def test_the_through_search_figures_are_percentages_per_group_kind_and_language(tmp_path):
    picked = [c for c in load_cases() if c.lang in ("en", "de")]
    cases = [*[c for c in picked if c.change][:4], *[c for c in picked if not c.change][:2],
             *[c for c in picked if c.lang == "de"][:1]]
    figures = evaluate_cases(cases, default_embedder())
    assert figures["cases"] == len(cases) == figures["groups"]["all"]["n"]
    assert set(figures["langs"]) == {"en", "de"}
    for row in (*figures["groups"].values(), *figures["kinds"].values(),
                *figures["langs"].values()):
        assert set(FIGURES) <= set(row)
        assert all(row[f] is None or 0.0 <= row[f] <= 100.0 for f in FIGURES)
    assert figures["groups"]["non-changes"]["stale_marked"] is None
    assert figures["groups"]["changes"]["non_change_superseded"] is None
    section = markdown(figures, "rmm bench supersede --through-search")
    assert "| **all** |" in section
    assert "bench-retrieval:supersede-search:begin" in section


def test_a_read_time_mark_on_a_non_change_counts_as_superseded():
    """A hit marked not current at read time is a supersession as much as a stored one."""
    from types import SimpleNamespace

    from rmm_core.bench.supersede_search import outcome

    case = next(c for c in load_cases() if not c.change)
    fact = next(iter(case.fact))
    memory = SimpleNamespace(current=True, refs=(fact,))
    marked = SimpleNamespace(memory=memory, refs=(fact,), current=False)
    unmarked = SimpleNamespace(memory=memory, refs=(fact,), current=True)
    assert outcome(case, [marked], [memory])["non_change_superseded"] is True
    assert outcome(case, [unmarked], [memory])["non_change_superseded"] is False


def test_the_held_out_update_set_loads_with_its_promised_shape():
    """`tests/data/updates_holdout.jsonl`: written without the development set, measured
    once (docs/benchmarks.md); here only its shape is checked, never a figure."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "data" / "updates_holdout.jsonl"
    comp = composition(load_cases(path))
    assert comp["cases"] == 120
    assert comp["changes"] == 90
    assert set(comp["langs"]) == {"en", "de", "fr", "es", "it", "pt"}
    assert comp["implicit_share"] >= 0.35
    assert all(n >= 3 for n in comp["non_change_kinds"].values())



def test_the_second_writers_update_set_loads_with_its_promised_shape():
    """`tests/data/updates_dev_more.jsonl`: 110 cases by a second writer who saw neither the
    method nor the first set, mostly non-changes said in chat the way people say them."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "data" / "updates_dev_more.jsonl"
    comp = composition(load_cases(path))
    assert (comp["cases"], comp["changes"]) == (110, 45)
    assert set(comp["langs"]) == {"en", "de", "fr", "es", "it", "pt"}
    assert comp["non_english_share"] >= 0.25
    assert len(comp["non_change_kinds"]) >= 12


# --through-search with an LLM: the change judge's wiring ----------------------------------------

def test_with_an_llm_the_change_judge_is_the_only_caller_and_its_verdict_reaches_the_figures(
        tmp_path):
    """Uses a scripted fake LLM (`rmm_core.testing.ScriptedLLM`, always "P1: supersedes"):
    this shows the wiring, not the judgement. A brother's new job shares the fact's words
    but changes nothing; the rules leave the fact current, the fake judge's verdict marks it
    superseded, and the run's usage counts its one call."""
    from rmm_core.bench.supersede_search import report, sample
    from rmm_core.testing import ScriptedLLM

    row = _row(change=False, non_change="other-person", current=["x1-s1-t1"], past=None)
    row["sessions"][2]["turns"][0]["text"] = ("My brother just started working as a pilot at "
                                              "KLM, flying from Amsterdam.")
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(row) + "\n")
    cases, embedder = load_cases(path), default_embedder()
    free = evaluate_cases(cases, embedder)
    llm = ScriptedLLM(judge_changes="P1: supersedes")
    judged = evaluate_cases(cases, embedder, llm=llm)
    assert "llm" not in free
    assert free["outcomes"][0]["non_change_superseded"] is False
    assert judged["outcomes"][0]["non_change_superseded"] is True
    assert judged["outcomes"][0]["stored"]["non_change_superseded"] is True
    assert judged["groups"]["non-changes"]["non_change_superseded"] == 100.0
    assert set(llm.tasks()) == {"judge_changes"}  # extraction and the rest stay LLM-free
    assert judged["llm"]["calls"] == judged["outcomes"][0]["llm_calls"] == len(llm.calls) >= 1
    assert judged["llm"]["failures"] == 0
    assert "change judge (ScriptedLLM): " in report(judged)
    subset = sample(load_cases(), 40)
    assert len(subset) == 40
    assert {c.change for c in subset} == {True, False}
    assert {c.lang == "en" for c in subset} == {True, False}
    assert sample(load_cases(), 40) == subset
