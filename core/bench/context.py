"""`rmm bench context`: SCM's context builder against plain rank-order filling on LoCoMo.

Per question, the same search hits are put into a context of B words two ways: in rank order
while they fit in what is left of B (the strict `Rtok@B` rule) and through `ContextBuilder`
(raw turns, or the summary for long memories, no turn paid twice). Reported: words in context
per question and gold-turn recall (a memory given as a summary counts as covering its turns;
`recall raw-only` does not). The gate's pass rate on the questions (all need memory) and on
small talk is reported too.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from ..memory import ReflectiveMemory
from ..models.embed import default_embedder
from ..read.scm import ContextBuilder, RuleGate, candidates_from
from .locomo import ingest, load_locomo
from .metrics import r_tok, words_in
from .retrieval import parse_range

DEPTH = 50
"""Hits ranked per question: more than any budget here can hold."""

SMALL_TALK = ["hi!", "thanks a lot", "ok cool", "good night", "haha yes", "how are you?",
              "What is the capital of France?", "Can you convert 5 miles to kilometres?",
              "Write a haiku about rain.", "What time zone is Tokyo in?"]
"""Inputs that need no long-term memory: the gate should skip them."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="path of locomo10.json (or the dev file)")
    parser.add_argument("--convs", default=None, help="conversations to use, e.g. 0-4 or 0,2")
    parser.add_argument("--budgets", default="500,1000,2000", help="word budgets to compare")
    parser.add_argument("--long-raw", default="60,100000",
                        help="words above which a memory's summary is preferred (a list: "
                             "each is a row; a huge value = summaries only when raw won't fit)")
    parser.add_argument("--json", dest="json_out", default=None, help="write figures here")


def run(args: argparse.Namespace) -> int:
    convs = load_locomo(args.data, parse_range(args.convs) if args.convs else None)
    budgets = [int(b) for b in args.budgets.split(",")]
    rows = evaluate(convs, budgets, [int(v) for v in args.long_raw.split(",")])
    print(f"LoCoMo: {len(convs)} conversations, {rows.pop('questions')} questions; "
          f"LLM-free pipeline; rows are budget/long-raw words")
    print(format_table(rows))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2))
    return 0


def evaluate(convs: list, budgets: list[int], long_raws: list[int]) -> dict[str, Any]:
    embedder = default_embedder()
    acc: dict[str, list[float]] = defaultdict(list)
    gate = RuleGate()
    with tempfile.TemporaryDirectory() as tmp:
        mem = ReflectiveMemory.open(str(Path(tmp) / "bench.sqlite"), embedder=embedder,
                                    progress=False)
        for conv in convs:
            user = conv.sample_id
            ingest(mem, conv)
            turns = {t.id: t for t in mem.turns(user_id=user)}
            probe = lambda q, u=user: mem.best_similarity(q, user_id=u)  # noqa: E731
            acc["gate questions"] += [float(gate.decide(q.question, probe=probe).use_memory)
                                      for q in conv.questions]
            acc["gate small talk"] += [float(gate.decide(q, probe=probe).use_memory)
                                       for q in SMALL_TALK]
            for q in conv.questions:
                hits = mem.search(q.question, user_id=user, k=DEPTH).hits
                ranked = [(h.text, h.refs) for h in hits]
                cands = candidates_from(hits, turns, dates=mem.config.search.context_dates)
                for budget, long_raw in product(budgets, long_raws):
                    acc[f"plain words@{budget}"].append(words_in(ranked, budget))
                    acc[f"plain recall@{budget}"].append(r_tok(ranked, q.evidence, budget))
                    budget = f"{budget}/{long_raw}"
                    t0 = time.perf_counter()
                    built = ContextBuilder(budget=int(budget.split("/")[0]), long_raw=long_raw,
                                           unit="words") \
                        .build(q.question, cands)
                    acc[f"build ms@{budget}"].append(1000 * (time.perf_counter() - t0))
                    raw_refs = {r for i in built.used if i.form == "raw" for r in i.refs}
                    acc[f"scm words@{budget}"].append(built.cost)
                    acc[f"scm recall@{budget}"].append(_share(q.evidence, set(built.refs)))
                    acc[f"scm recall raw-only@{budget}"].append(_share(q.evidence, raw_refs))
                    acc[f"scm summaries@{budget}"].append(
                        sum(i.form == "summary" for i in built.items))
        mem.close()
    out: dict[str, Any] = {"questions": sum(len(c.questions) for c in convs)}
    for b, long_raw in product(budgets, long_raws):
        budget = f"{b}/{long_raw}"
        out[budget] = {
            "plain words/q": float(np.mean(acc[f"plain words@{b}"])),
            "plain recall %": 100 * float(np.mean(acc[f"plain recall@{b}"])),
            "scm words/q": float(np.mean(acc[f"scm words@{budget}"])),
            "scm recall %": 100 * float(np.mean(acc[f"scm recall@{budget}"])),
            "scm raw-only %": 100 * float(np.mean(acc[f"scm recall raw-only@{budget}"])),
            "summaries/q": float(np.mean(acc[f"scm summaries@{budget}"])),
            "build ms": float(np.mean(acc[f"build ms@{budget}"])),
        }
    out["gate"] = {"questions passed %": 100 * float(np.mean(acc["gate questions"])),
                   "small talk passed %": 100 * float(np.mean(acc["gate small talk"]))}
    return out


def _share(gold: frozenset[str], got: set[str]) -> float:
    return len(gold & got) / len(gold) if gold else 0.0


def format_table(rows: dict[str, Any]) -> str:
    budgets = [k for k in rows if k != "gate"]
    columns = list(rows[budgets[0]])
    head = f"{'budget/long-raw':<16}" + "".join(f"{c:>16}" for c in columns)
    lines = [head, "-" * len(head)]
    for b in budgets:
        lines.append(f"{b:<16}" + "".join(f"{rows[b][c]:>16.1f}" for c in columns))
    gate = rows["gate"]
    lines.append("gate (LLM-free): " + ", ".join(f"{k} {v:.1f}" for k, v in gate.items()))
    return "\n".join(lines)

