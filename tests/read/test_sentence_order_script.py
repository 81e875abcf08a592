"""`scripts/sentence_order_vs.py`, the measure behind "the choice is by words" in
docs/benchmarks.md: its embedder order ranks an excerpt's own sentences (real embedder)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from rmm_core.read import excerpt

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sentence_order_vs.py"


def _script():
    spec = importlib.util.spec_from_file_location("sentence_order_vs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_embedder_order_puts_the_sentence_meant_first(embedder):
    script = _script()
    text = ("user: We drove to the coast on Sunday. Our tabby sleeps on my keyboard all day. "
            "The weather stayed grey until noon.")
    turns = excerpt._turns(text, ("user",), ("t1",), None)
    parts = [excerpt._Part(turn, 0.0) for turn in turns]
    question = embedder.embed(["Which animal lives with them?"])[0]
    vector = lambda s: embedder.embed([s])[0]  # noqa: E731
    order = script.closest_first(parts, question, vector)
    assert sorted(order) == [(0, 0), (0, 1), (0, 2)]
    assert order[0] == (0, 1)
