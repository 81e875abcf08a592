"""`rmm bench retrieval` (alias `locomo`): the product's retrieval against fixed-unit
baselines on any dataset of the loader registry, one run. The product's figures come from
the calls a caller makes: R_any@k and Rtok@B from `search(max_words=4000)`, whose head is
what `search(k=...)` and every smaller budget return (checked for k=5 on every question)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..config import MemoryConfig, dotted_name
from ..config import unit_words as unit_budget
from ..language.units import passages
from ..memory import ReflectiveMemory
from ..models.embed import Embedder, default_embedder, query_vectors
from ..ops.commands import BAD_DATA
from ..ops.progress import progress
from .baselines import RETRIEVERS, UNITS, FixedUnits, build_units
from .datasets import CATEGORY_LABELS, LOADERS, load_args
from .dates import calendar_date, date_in_context
from .metrics import BUDGETS, RankedUnit
from .records import Conversation, ingest
from .report import (
    PRODUCT,
    category_table,
    format_table,
    markdown_section,
    probe_columns,
    probe_table,
    text_table,
    write_markdown,
)
from .tally import Tally

PACE_WORDS = 20_000
"""Words of passages the embedder encodes alone, for the ingest/embedder ratio."""

PREFIX = "k=5 is the head"
"""The share of questions whose `search(k=5)` is the head of the budgeted call's list."""
HIT_DEPTH = 10
"""Words per hit are counted over each question's top hits, as many as R_any@10 looks at."""
EVENT_DATE = "event date@1000"
"""Questions whose answer is one calendar date: that date written in the first 1,000 words."""
DEFAULT_UNITS = ",".join(UNITS)


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
    parser.add_argument("--baselines", default=DEFAULT_UNITS,
                        help=f"fixed units to compare, of {list(UNITS)} (turn windows, "
                             f"sessions, passages of at most 60 or 100 words within each "
                             f"turn); '' for none")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="MemoryConfig override for the product pipeline, by dotted name, e.g. "
                             "search.candidates=40 (repeatable)")
    parser.add_argument("--markdown", default=None, metavar="PATH",
                        help="write the figures as a markdown section (command, date, "
                             "machine) into PATH, replacing this dataset's previous section "
                             "(e.g. docs/benchmarks.md)")


def run(args: argparse.Namespace) -> int:
    convs = load_args(args.dataset, args.data, parse_range(args.convs) if args.convs else None)
    if convs is None:
        return BAD_DATA
    units = [u for u in args.baselines.split(",") if u]
    unknown = sorted(set(units) - set(UNITS))
    if unknown:
        print(f"rmm bench: unknown baseline unit(s) {unknown}; choose among {list(UNITS)}",
              file=sys.stderr)
        return BAD_DATA
    settings = dict(parse_setting(s) for s in args.set)
    rows = {PRODUCT: evaluate_product(convs, settings)}
    for unit in units:
        rows.update(evaluate_baselines(convs, unit))
    labels = CATEGORY_LABELS.get(args.dataset, {})
    notes = summary(args.dataset, convs, rows[PRODUCT])
    print(notes[0])
    print(format_table(rows))
    print("\nper question category (the product and the best baseline by Rtok@1000):")
    print(text_table(category_table(rows, labels)))
    if probe_columns(rows):
        print("\nprobes (strict, first 1,000 words):")
        print(text_table(probe_table(rows)))
    print("\n".join(["", *notes[1:]]))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2))
    if args.markdown:
        write_markdown(args.markdown, args.dataset, markdown_section(
            args.dataset, command_line(args), rows, notes, labels))
    return 0


def summary(dataset: str, convs: list[Conversation], product: dict[str, Any]) -> list[str]:
    """The run's lines of prose: what was measured, then the product's date and speed
    figures."""
    lines = [f"{dataset}: {len(convs)} conversations, "
             f"{sum(len(c.questions) for c in convs)} questions with gold evidence "
             f"({sum(c.skipped for c in convs)} left out: no evidence, or adversarial)."]
    if product["date questions"]:
        lines.append(f"rmm event date in context@1000: {product[EVENT_DATE]:.1f} % of the "
                     f"{product['date questions']} questions whose answer is one calendar "
                     f"date.")
    lines.append(
        f"rmm ingest: {product['ingest s']:.1f} s, {product['ingest turns/s']:.0f} turns/s, "
        f"{product['ingest words/s']:.0f} words/s (the embedder alone on passages of the same "
        f"turns, this run: {product['embedder words/s']:.0f} words/s, ratio "
        f"{product['ingest words/s'] / product['embedder words/s']:.2f}); search (k=5) p50 "
        f"{product['search p50 ms']:.1f} ms, p95 {product['search p95 ms']:.1f} ms; "
        f"`search(k=5)` is the head of the budgeted call's list for {product[PREFIX]:.1f} % "
        f"of the questions.")
    return lines


def command_line(args: argparse.Namespace) -> str:
    """The `rmm bench retrieval` command of this run, without where its outputs went."""
    parts = ["rmm bench retrieval", "--dataset", args.dataset, "--data", shlex.quote(args.data)]
    if args.convs:
        parts += ["--convs", args.convs]
    if args.baselines != DEFAULT_UNITS:
        parts += ["--baselines", shlex.quote(args.baselines)]
    for setting in args.set:
        parts += ["--set", shlex.quote(setting)]
    return " ".join(parts)


def evaluate_product(convs: list[Conversation], settings: dict[str, Any]) -> dict[str, Any]:
    """Ingest every conversation through the public API and score `search` rankings."""
    embedder = default_embedder(MemoryConfig(**settings).embedding.model)
    tally, dated = Tally(), []
    ingest_s, n_turns, n_words, latencies, unit_words = 0.0, 0, 0, [], []
    hit_words: list[int] = []
    prefix: list[bool] = []
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
                head = mem.search(q.question, user_id=conv.sample_id, k=5)
                latencies.append(time.perf_counter() - t0)
                ranked = rank_product(mem, conv.sample_id, q.question)
                prefix.append([(h.text, h.refs) for h in head] == ranked[:len(head)])
                hit_words += [len(text.split()) for text, _ in ranked[:HIT_DEPTH]]
                tally.add(ranked, q)
                day = calendar_date(q.answer)
                if day is not None:
                    dated.append(date_in_context(ranked, day))
        pace = embedder_pace(embedder, convs, unit_budget(mem.config))
        mem.close()
    return {**tally.row(),
            **sizes(hit_words, unit_words),
            EVENT_DATE: 100 * float(np.mean(dated)) if dated else float("nan"),
            "date questions": len(dated),
            PREFIX: 100 * float(np.mean(prefix)) if prefix else float("nan"),
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


def evaluate_baselines(convs: list[Conversation], unit: str) -> dict[str, dict[str, Any]]:
    """Rows `unit/bm25`, `unit/dense`, `unit/fused` for one fixed unit."""
    embedder = default_embedder()
    tallies = {r: Tally() for r in RETRIEVERS}
    hit_words: dict[str, list[int]] = {r: [] for r in RETRIEVERS}
    words: list[int] = []
    for conv in progress(convs, desc=f"{unit} baselines", unit="conversation"):
        units = build_units(conv, unit, embedder)
        words += [len(t.split()) for t in units.texts]
        for retriever, rankings in rank_units(units, conv, embedder).items():
            for q, ranked in zip(conv.questions, rankings):
                hit_words[retriever] += [len(text.split()) for text, _ in ranked[:HIT_DEPTH]]
                tallies[retriever].add(ranked, q)
    return {f"{unit}/{r}": {**tally.row(), **sizes(hit_words[r], words)}
            for r, tally in tallies.items()}


def sizes(hit_words: list[int], unit_words: list[int]) -> dict[str, float]:
    """Words per hit (p50, p95 over each question's top hits) and mean words per unit."""
    return {"words/hit p50": float(np.percentile(hit_words, 50)),
            "words/hit p95": float(np.percentile(hit_words, 95)),
            "words/unit": float(np.mean(unit_words))}


def rank_product(mem: ReflectiveMemory, user_id: str, question: str) -> list[RankedUnit]:
    """The memory's ranking of one question as a caller gets it: `search` with the largest
    budget (`max_words`), whose head every smaller budget and `k` returns."""
    hits = mem.search(question, user_id=user_id, max_words=max(BUDGETS))
    return [(h.text, h.refs) for h in hits]


def rank_units(units: FixedUnits, conv: Conversation, embedder: Embedder,
               depth: int | None = None) -> dict[str, list[list[RankedUnit]]]:
    """Each retriever's ranking of `units` (all of them by default) for every question of
    `conv`, in order."""
    query_vecs = query_vectors(embedder, [q.question for q in conv.questions])
    return {retriever: [[(units.texts[i], units.refs[i])
                         for i in units.rank(retriever, q.question, qv, depth)]
                        for q, qv in zip(conv.questions, query_vecs)]
            for retriever in RETRIEVERS}


def parse_setting(text: str) -> tuple[str, Any]:
    """`FIELD=VALUE` with a JSON value or a plain string; a flat name of earlier releases
    comes back as its dotted name (with a `DeprecationWarning`)."""
    field, sep, value = text.partition("=")
    if not sep:
        raise SystemExit(f"--set needs FIELD=VALUE, got {text!r}")
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return dotted_name(field, parsed, stacklevel=2), parsed
