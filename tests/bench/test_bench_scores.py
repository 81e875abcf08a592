"""`rmm bench scores`: its AUC on hand-made scores, and the command end to end on the small
JSON Lines conversations, its gold count checked by a recount through the public API."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rmm_core import ReflectiveMemory
from rmm_core.bench.jsonl import load_jsonl
from rmm_core.bench.records import ingest
from rmm_core.bench.scores import GROUPS, SCORES, THRESHOLDS, auc
from rmm_core.cli import main
from rmm_core.ops.commands import BAD_DATA

TINY = Path(__file__).parents[1] / "data" / "conversations.jsonl"


def test_auc_counts_ties_half_and_is_nan_without_a_side():
    assert auc(np.array([0.9, 0.8]), np.array([0.1, 0.2])) == 1.0
    assert auc(np.array([0.1]), np.array([0.9])) == 0.0
    assert auc(np.array([0.5]), np.array([0.5, 0.1])) == 0.75
    assert np.isnan(auc(np.array([]), np.array([0.5])))


def test_the_command_prints_and_writes_figures_matching_a_recount(tmp_path, capsys, embedder):
    out, md = tmp_path / "scores.json", tmp_path / "bench.md"
    assert main(["--no-progress", "bench", "scores", "--dataset", "jsonl", "--data", str(TINY),
                 "--json", str(out), "--markdown", str(md)]) == 0
    printed = capsys.readouterr().out
    assert "search(max_words=1000):" in printed
    assert "search(k=5):" in printed
    figures = json.loads(out.read_text())
    convs = load_jsonl(TINY)
    assert figures["questions"] == sum(len(c.questions) for c in convs)
    gold = 0
    with ReflectiveMemory.open(str(tmp_path / "recount.sqlite"), embedder=embedder,
                               progress=False) as mem:
        for conv in convs:
            ingest(mem, conv)
        for conv in convs:
            for q in conv.questions:
                hits = mem.search(q.question, user_id=conv.sample_id, max_words=1000)
                gold += sum(bool(q.evidence.intersection(h.refs)) for h in hits)
    call = figures["calls"]["max_words=1000"]
    assert gold
    assert call["hits"]["gold"] == gold
    assert call["hits"]["elsewhere"] > 0  # each question asked of the other conversation
    for call in figures["calls"].values():
        for kind in SCORES:
            assert 0.0 <= call[kind]["ties %"] <= 100.0
            assert 0.0 <= call[kind]["AUC gold/other"] <= 1.0
            for group in GROUPS:  # a higher threshold never keeps more
                kept = [call[kind]["kept %"][str(t)][group] for t in THRESHOLDS]
                assert kept == sorted(kept, reverse=True)
    text = md.read_text()
    assert text.startswith("<!-- bench-scores:jsonl:begin -->")
    assert "rmm bench scores --dataset jsonl" in text


@pytest.mark.parametrize("data", ["missing.jsonl", None])
def test_unreadable_data_is_bad_data(tmp_path, data, capsys):
    if data is None:
        with pytest.raises(SystemExit):  # --data is required
            main(["bench", "scores", "--dataset", "jsonl"])
        return
    assert main(["bench", "scores", "--dataset", "jsonl", "--data",
                 str(tmp_path / data)]) == BAD_DATA
