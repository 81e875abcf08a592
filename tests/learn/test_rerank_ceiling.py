"""`rmm bench rerank --ceiling`: the headroom of the feature reranker's form on held-out
questions. The fit is checked on hand-made pools; the CLI on the small JSONL test file with the
real embedder and real SQLite files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rmm_core.bench.rerank_ceiling import _figures, _fit
from rmm_core.cli import main
from rmm_core.ops.commands import BAD_DATA

DATA = Path(__file__).parents[1] / "data" / "conversations.jsonl"


def pools(seed: int = 0, count: int = 40, k: int = 12) -> list:
    """Pools where one signal (column 2) marks the evidence and the fused score (column 0)
    ranks it below the fifth place."""
    rng = np.random.default_rng(seed)
    out = []
    for n in range(count):
        x = rng.normal(size=(k, 4))
        held = np.zeros(k, bool)
        held[k - 1 - n % 3] = True
        x[:, 0] = np.linspace(2, -2, k)
        x[:, 2] = np.where(held, 1.0, 0.0) + 0.1 * rng.normal(size=k)
        units = [(f"memory {i}", [f"q{n}t{i}"]) for i in range(k)]
        out.append((x, held, units, frozenset(f"q{n}t{i}" for i in np.flatnonzero(held))))
    return out


def test_the_fit_finds_the_signal_that_marks_the_evidence():
    examples = pools()
    start = np.array([1.0, 0.0, 0.0, 0.0])
    before = _figures(examples, [x @ start for x, *_ in examples])
    w = _fit(examples, start, l2=1e-4)
    after = _figures(examples, [x @ w for x, *_ in examples])
    assert before["R_any@5"] == 0.0
    assert after["R_any@5"] == 100.0
    assert w[2] > abs(w[1])
    assert w[2] > abs(w[3])


def test_bench_rerank_ceiling_prints_the_headroom_per_pool_size(tmp_path, capsys):
    out = tmp_path / "f.json"
    assert main(["bench", "rerank", "--dataset", f"jsonl={DATA}", "--train", "jsonl=0",
                 "--test", "jsonl=1", "--phases", "", "--ceiling", "5,8", "--plot", "",
                 "--json", str(out)]) == 0
    assert "ceiling, R_any@5 / Rtok@1000 within a pool of K candidates" in capsys.readouterr().out
    ceiling = json.loads(out.read_text())["families"]["jsonl"]["ceiling"]
    assert set(ceiling) == {"5", "8"}
    for rows in ceiling.values():
        assert set(rows) == {"none", "shipped", "fit on train", "fit on these", "pool"}
        best = max(rows["none"]["R_any@5"], rows["shipped"]["R_any@5"])
        assert best <= rows["fit on these"]["R_any@5"] <= rows["pool"]["R_any@5"]


@pytest.mark.parametrize("sizes", ["3", "20,x", "", "20,5000"])
def test_bench_rerank_ceiling_rejects_bad_pool_sizes(sizes, capsys):
    assert main(["bench", "rerank", "--dataset", f"jsonl={DATA}", "--phases", "",
                 "--ceiling", sizes, "--plot", ""]) == BAD_DATA
    assert "--ceiling" in capsys.readouterr().err
