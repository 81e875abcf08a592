"""`rmm bench retrieval` (alias `locomo`): the product's retrieval against fixed-unit
baselines on any dataset of the loader registry, one run."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ..config import unit_words as unit_budget
from ..errors import InvalidInputError
from ..memory import ReflectiveMemory
from ..models.embed import Embedder, default_embedder
from ..ops.commands import BAD_DATA
from ..ops.progress import progress
from ..write.units import passages
from .baselines import RETRIEVERS, UNITS, FixedUnits, build_units
from .datasets import LOADERS, load
from .dates import calendar_date, date_in_context
from .metrics import BUDGETS, METRICS, RankedUnit, fitting, score_question
from .records import Conversation, ingest

PACE_WORDS = 20_000
"""Words of passages the embedder encodes alone, for the ingest/embedder ratio."""

DEPTH = 100
"""Hits asked of `search` per question at first; deeper when they do not fill every budget."""
HIT_DEPTH = 10
"""Words per hit are counted over each question's top hits, as many as R_any@10 looks at."""
EVENT_DATE = "event date@1000"
"""Questions whose answer is one calendar date: that date written in the first 1,000 words."""
SIZE_COLUMNS = ("words/hit p50", "words/hit p95", "words/unit")


def parse_range(spec: str) -> list[int]:
    """`0-4` or `0,2,3` -> conversation positions."""
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", choices=sorted(LOADERS), default="locomo",
                        help="how to read --data (default locomo)")
    parser.add_argument("--data", required=True,
                        help="locomo: locomo10.json (or the dev file); beam: a track directory "
                             "like 100K or one conversation's directory; jsonl: the file")
    parser.add_argument("--convs", default=None,
                        help="conversation positions in the dataset's order, e.g. 0-4 or 0,2 "
                             "(BEAM is in numeric order: 0 is conversation 1)")
    parser.add_argument("--json", dest="json_out", default=None, help="write figures here")
    parser.add_argument("--baselines", default=",".join(UNITS),
                        help=f"fixed units to compare, of {sorted(UNITS)}; '' for none")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="MemoryConfig override for the product pipeline (repeatable)")


def run(args: argparse.Namespace) -> int:
    try:
        convs = load(args.dataset, args.data, parse_range(args.convs) if args.convs else None)
    except (InvalidInputError, FileNotFoundError) as exc:
        print(f"rmm bench: cannot read {args.data} as {args.dataset}: {exc}", file=sys.stderr)
        return BAD_DATA
    settings = dict(parse_setting(s) for s in args.set)
    rows = {"rmm (default)": evaluate_product(convs, settings)}
    for unit in [u for u in args.baselines.split(",") if u]:
        rows.update(evaluate_baselines(convs, unit))
    print(f"{args.dataset}: {len(convs)} conversations, "
          f"{sum(len(c.questions) for c in convs)} questions with gold evidence "
          f"({sum(c.skipped for c in convs)} left out: no evidence, or adversarial)")
    print(format_table(rows))
    product = rows["rmm (default)"]
    if product["date questions"]:
        print(f"rmm event date in context@1000: {product[EVENT_DATE]:.1f} % of the "
              f"{product['date questions']} questions whose answer is one calendar date")
    print(f"rmm ingest: {product['ingest s']:.1f} s, {product['ingest turns/s']:.0f} turns/s, "
          f"{product['ingest words/s']:.0f} words/s (the embedder alone on passages of the same "
          f"turns, this run: {product['embedder words/s']:.0f} words/s, ratio "
          f"{product['ingest words/s'] / product['embedder words/s']:.2f}); search (k=5) p50 "
          f"{product['search p50 ms']:.1f} ms, p95 {product['search p95 ms']:.1f} ms")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2))
    return 0


def evaluate_product(convs: list[Conversation], settings: dict[str, Any]) -> dict[str, float]:
    """Ingest every conversation through the public API and score `search` rankings."""
    embedder = default_embedder(settings.get("embedding_model"))
    per_q: dict[str, list[float]] = defaultdict(list)
    ingest_s, n_turns, n_words, latencies, unit_words = 0.0, 0, 0, [], []
    hit_words: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        mem = ReflectiveMemory.open(str(Path(tmp) / "bench.sqlite"), embedder=embedder,
                                    progress=False, **settings)
        for conv in convs:
            ingest_s += ingest(mem, conv)
            turns = [t for s in conv.sessions for t in s.turns]
            n_turns += len(turns)
            n_words += sum(len(t.text.split()) for t in turns)
            unit_words += [len(m.text.split()) for m in mem.memories(user_id=conv.sample_id)]
            for q in progress(conv.questions, desc=f"{conv.sample_id} questions",
                              unit="question"):
                t0 = time.perf_counter()
                mem.search(q.question, user_id=conv.sample_id, k=5)
                latencies.append(time.perf_counter() - t0)
                ranked = rank_product(mem, conv.sample_id, q.question)
                hit_words += [len(text.split()) for text, _ in ranked[:HIT_DEPTH]]
                for name, value in score_question(ranked, q.evidence).items():
                    per_q[name].append(value)
                day = calendar_date(q.answer)
                if day is not None:
                    per_q[EVENT_DATE].append(date_in_context(ranked, day))
        pace = embedder_pace(embedder, convs, unit_budget(mem.config))
        mem.close()
    dated = per_q[EVENT_DATE]
    return {**{name: 100 * float(np.mean(per_q[name])) for name in METRICS},
            **sizes(hit_words, unit_words),
            EVENT_DATE: 100 * float(np.mean(dated)) if dated else float("nan"),
            "date questions": len(dated),
            "ingest s": ingest_s,
            "ingest turns/s": n_turns / ingest_s,
            "ingest words/s": n_words / ingest_s,
            "embedder words/s": pace,
            "search p50 ms": 1000 * float(np.percentile(latencies, 50)),
            "search p95 ms": 1000 * float(np.percentile(latencies, 95))}


def embedder_pace(embedder: Embedder, convs: list[Conversation], max_words: int) -> float:
    """Words/s of the embedder alone encoding passages as ingest cuts them (turns spread over
    the dataset, about PACE_WORDS words): what ingest speed is measured against."""
    turns = [t for c in convs for s in c.sessions for t in s.turns]
    texts, words = [], 0
    for turn in turns[::max(1, len(turns) // 400)]:
        for piece in passages(turn, max_words):
            texts.append(piece.render())
            words += len(piece.text.split())
        if words >= PACE_WORDS:
            break
    t0 = time.perf_counter()
    embedder.embed(texts)
    return words / max(time.perf_counter() - t0, 1e-9)


def evaluate_baselines(convs: list[Conversation], unit: str) -> dict[str, dict[str, float]]:
    """Rows `unit/bm25`, `unit/dense`, `unit/fused` for one fixed unit."""
    embedder = default_embedder()
    per_q: dict[str, dict[str, list[float]]] = {r: defaultdict(list) for r in RETRIEVERS}
    hit_words: dict[str, list[int]] = {r: [] for r in RETRIEVERS}
    words: list[int] = []
    for conv in progress(convs, desc=f"{unit} baselines", unit="conversation"):
        units = build_units(conv, unit, embedder)
        words += [len(t.split()) for t in units.texts]
        for retriever, rankings in rank_units(units, conv, embedder).items():
            for q, ranked in zip(conv.questions, rankings):
                hit_words[retriever] += [len(text.split()) for text, _ in ranked[:HIT_DEPTH]]
                for name, value in score_question(ranked, q.evidence).items():
                    per_q[retriever][name].append(value)
    return {f"{unit}/{r}": {**{n: 100 * float(np.mean(v[n])) for n in METRICS},
                            **sizes(hit_words[r], words)}
            for r, v in per_q.items()}


def sizes(hit_words: list[int], unit_words: list[int]) -> dict[str, float]:
    """Words per hit (p50, p95 over each question's top hits) and mean words per unit."""
    return {"words/hit p50": float(np.percentile(hit_words, 50)),
            "words/hit p95": float(np.percentile(hit_words, 95)),
            "words/unit": float(np.mean(unit_words))}


def rank_product(mem: ReflectiveMemory, user_id: str, question: str,
                 depth: int = DEPTH) -> list[RankedUnit]:
    """The memory's own `search` ranking of one question, as the metrics measure it: deep
    enough that the largest budget's list ends inside it (or every memory)."""
    while True:
        ranked = [(h.text, h.refs) for h in mem.search(question, user_id=user_id, k=depth)]
        if len(ranked) < depth or fitting(ranked, max(BUDGETS))[0] < len(ranked):
            return ranked
        depth *= 4


def rank_units(units: FixedUnits, conv: Conversation, embedder: Embedder,
               depth: int | None = None) -> dict[str, list[list[RankedUnit]]]:
    """Each retriever's ranking of `units` (all of them by default) for every question of
    `conv`, in order."""
    query_vecs = embedder.embed([q.question for q in conv.questions])
    return {retriever: [[(units.texts[i], units.refs[i])
                         for i in units.rank(retriever, q.question, qv, depth)]
                        for q, qv in zip(conv.questions, query_vecs)]
            for retriever in RETRIEVERS}


def format_table(rows: dict[str, dict[str, float]]) -> str:
    columns = [*METRICS, *SIZE_COLUMNS]
    head = f"{'pipeline':<16}" + "".join(f"{c:>14}" for c in columns)
    lines = [head, "-" * len(head)]
    for name, row in rows.items():
        lines.append(f"{name:<16}" + "".join(f"{row[c]:>14.1f}" for c in columns))
    return "\n".join(lines)


def parse_setting(text: str) -> tuple[str, Any]:
    field, sep, value = text.partition("=")
    if not sep:
        raise SystemExit(f"--set needs FIELD=VALUE, got {text!r}")
    try:
        return field, json.loads(value)
    except json.JSONDecodeError:
        return field, value
