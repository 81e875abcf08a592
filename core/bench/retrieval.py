"""`rmm bench locomo`: the product's retrieval against fixed-unit baselines, one run."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ..embed import Embedder, default_embedder
from ..memory import ReflectiveMemory
from .baselines import RETRIEVERS, UNITS, FixedUnits, build_units
from .locomo import Conversation, ingest, load_locomo
from .metrics import METRICS, RankedUnit, score_question

DEPTH = 100
"""Units ranked per question: enough to fill the largest word budget (2000)."""


def parse_range(spec: str) -> list[int]:
    """`0-4` or `0,2,3` -> conversation positions."""
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="path of locomo10.json (or the dev file)")
    parser.add_argument("--convs", default=None, help="conversations to use, e.g. 0-4 or 0,2")
    parser.add_argument("--json", dest="json_out", default=None, help="write figures here")
    parser.add_argument("--baselines", default="turn,w3,session",
                        help=f"fixed units to compare, of {sorted(UNITS)}; '' for none")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="MemoryConfig override for the product pipeline (repeatable)")


def run(args: argparse.Namespace) -> int:
    convs = load_locomo(args.data, parse_range(args.convs) if args.convs else None)
    settings = dict(parse_setting(s) for s in args.set)
    rows = {"rmm (default)": evaluate_product(convs, settings)}
    for unit in [u for u in args.baselines.split(",") if u]:
        rows.update(evaluate_baselines(convs, unit))
    n_questions = sum(len(c.questions) for c in convs)
    print(f"LoCoMo: {len(convs)} conversations, {n_questions} questions (categories 1-4)")
    print(format_table(rows))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2))
    return 0


def evaluate_product(convs: list[Conversation], settings: dict[str, Any]) -> dict[str, float]:
    """Ingest every conversation through the public API and score `search` rankings."""
    embedder = default_embedder(settings.get("embedding_model"))
    per_q: dict[str, list[float]] = defaultdict(list)
    ingest_s, n_turns, latencies, unit_words = 0.0, 0, [], []
    with tempfile.TemporaryDirectory() as tmp:
        mem = ReflectiveMemory.open(str(Path(tmp) / "bench.sqlite"), embedder=embedder,
                                    progress=False, **settings)
        for conv in convs:
            ingest_s += ingest(mem, conv)
            n_turns += sum(len(s.turns) for s in conv.sessions)
            unit_words += [len(m.text.split()) for m in mem.memories(user_id=conv.sample_id)]
            for q in conv.questions:
                t0 = time.perf_counter()
                mem.search(q.question, user_id=conv.sample_id, k=5)
                latencies.append(time.perf_counter() - t0)
                ranked = rank_product(mem, conv.sample_id, q.question)
                for name, value in score_question(ranked, q.evidence).items():
                    per_q[name].append(value)
        mem.close()
    row = {name: 100 * float(np.mean(per_q[name])) for name in METRICS}
    row["words/unit"] = float(np.mean(unit_words))
    row["ingest turns/s"] = n_turns / ingest_s
    row["search p50 ms"] = 1000 * float(np.percentile(latencies, 50))
    row["search p95 ms"] = 1000 * float(np.percentile(latencies, 95))
    return row


def evaluate_baselines(convs: list[Conversation], unit: str) -> dict[str, dict[str, float]]:
    """Rows `unit/bm25`, `unit/dense`, `unit/fused` for one fixed unit."""
    embedder = default_embedder()
    per_q: dict[str, dict[str, list[float]]] = {r: defaultdict(list) for r in RETRIEVERS}
    words: list[int] = []
    for conv in convs:
        units = build_units(conv, unit, embedder)
        words += [len(t.split()) for t in units.texts]
        for retriever, rankings in rank_units(units, conv, embedder).items():
            for q, ranked in zip(conv.questions, rankings):
                for name, value in score_question(ranked, q.evidence).items():
                    per_q[retriever][name].append(value)
    return {f"{unit}/{r}": {**{n: 100 * float(np.mean(v[n])) for n in METRICS},
                            "words/unit": float(np.mean(words))}
            for r, v in per_q.items()}


def rank_product(mem: ReflectiveMemory, user_id: str, question: str,
                 depth: int = DEPTH) -> list[RankedUnit]:
    """The memory's own `search` ranking of one question, as the metrics measure it."""
    return [(h.text, h.refs) for h in mem.search(question, user_id=user_id, k=depth)]


def rank_units(units: FixedUnits, conv: Conversation, embedder: Embedder,
               depth: int = DEPTH) -> dict[str, list[list[RankedUnit]]]:
    """Each retriever's ranking of `units` for every question of `conv`, in order."""
    query_vecs = embedder.embed([q.question for q in conv.questions])
    return {retriever: [[(units.texts[i], units.refs[i])
                         for i in units.rank(retriever, q.question, qv, depth)]
                        for q, qv in zip(conv.questions, query_vecs)]
            for retriever in RETRIEVERS}


def format_table(rows: dict[str, dict[str, float]]) -> str:
    columns = [*METRICS, "words/unit", "ingest turns/s", "search p50 ms", "search p95 ms"]
    head = f"{'pipeline':<16}" + "".join(f"{c:>15}" for c in columns)
    lines = [head, "-" * len(head)]
    for name, row in rows.items():
        cells = "".join(f"{row[c]:>15.1f}" if c in row else f"{'':>15}" for c in columns)
        lines.append(f"{name:<16}{cells}")
    return "\n".join(lines)


def parse_setting(text: str) -> tuple[str, Any]:
    field, sep, value = text.partition("=")
    if not sep:
        raise SystemExit(f"--set needs FIELD=VALUE, got {text!r}")
    try:
        return field, json.loads(value)
    except json.JSONDecodeError:
        return field, value
