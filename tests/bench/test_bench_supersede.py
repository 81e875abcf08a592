"""`rmm bench supersede`: the command on the packaged set with the real embedder, and its
figures' arithmetic."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rmm_core.bench.supersede import auroc, best_threshold, load_pairs, prf
from rmm_core.cli import main
from rmm_core.errors import InvalidInputError
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
