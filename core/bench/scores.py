"""`rmm bench scores`: what a `min_score` threshold keeps, with the hits' score against the one
it replaced (relevance capped by the hits above, no place), on the same lists in one run.

Each question is asked as a caller asks it (`search(max_words=1000)` and `search(k=5)`) of
its own conversation's user, and of the next conversation's user: a question asked elsewhere,
whose every hit a threshold should drop. A hit is gold when it carries a turn of the
question's evidence. Per call: the share of adjacent hits whose scores tie; how often a gold
hit scores above another hit of its own questions and above a hit of a question asked
elsewhere (AUC); and for each threshold, the share of gold hits, other hits and hits asked
elsewhere it keeps. The replaced score is recomputed from the candidates' relevance
(`result.candidates`), so both scores are read on one ranked list.
"""

from __future__ import annotations

import argparse
import json
import shlex
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..memory import ReflectiveMemory
from ..models.embed import default_embedder
from ..ops.commands import BAD_DATA
from ..ops.progress import progress
from ..read.score import PLACE
from ..types import SearchResult
from .datasets import LOADERS, load_args
from .records import Conversation, ingest
from .report import markdown_table, text_table, write_markdown
from .retrieval import parse_range

CALLS = {"max_words=1000": {"max_words": 1000}, "k=5": {"k": 5}}
"""The calls measured: what the adapters ask for, and `search`'s default."""
THRESHOLDS = tuple(round(0.1 + 0.05 * i, 2) for i in range(11))
SCORES = ("before", "now")
"""The replaced score (relevance capped by the hits above) and the hits' score."""
GROUPS = ("gold", "other", "elsewhere")
"""Gold hits, the other hits of the same questions, the hits of questions asked elsewhere."""
TITLES = {"locomo": "LoCoMo", "beam": "BEAM"}


@dataclass(slots=True)
class Tally:
    """One call's scores, by score kind and group, and its adjacent pairs and ties."""

    values: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: {s: {g: [] for g in GROUPS} for s in SCORES})
    pairs: int = 0
    ties: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SCORES, 0))

    def add(self, result: SearchResult, evidence: frozenset[str], elsewhere: bool) -> None:
        relevance = {c.memory.id: c.score for c in result.candidates}
        now = [h.score for h in result.hits]
        before = list(np.minimum.accumulate([relevance[h.memory.id] for h in result.hits]))
        self.pairs += max(len(now) - 1, 0)
        for kind, scores in zip(SCORES, (before, now)):
            self.ties[kind] += sum(a == b for a, b in zip(scores, scores[1:]))
            for hit, score in zip(result.hits, scores):
                group = "elsewhere" if elsewhere else \
                    "gold" if evidence.intersection(hit.refs) else "other"
                self.values[kind][group].append(float(score))

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pairs": self.pairs,
                               "hits": {g: len(self.values["now"][g]) for g in GROUPS}}
        for kind in SCORES:
            v = {g: np.asarray(self.values[kind][g]) for g in GROUPS}
            out[kind] = {
                "ties %": 100 * self.ties[kind] / max(self.pairs, 1),
                "AUC gold/other": auc(v["gold"], v["other"]),
                "AUC gold/elsewhere": auc(v["gold"], v["elsewhere"]),
                "90 % of gold from": float(np.quantile(v["gold"], 0.1)) if len(v["gold"])
                else float("nan"),
                "kept %": {str(t): {g: 100 * float(np.mean(v[g] >= t)) if len(v[g])
                                    else float("nan") for g in GROUPS} for t in THRESHOLDS}}
        return out


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """The chance that a positive scores above a negative (ties count half); nan when
    either is empty."""
    if not len(positive) or not len(negative):
        return float("nan")
    negative = np.sort(negative)
    below = np.searchsorted(negative, positive, "left")
    upto = np.searchsorted(negative, positive, "right")
    return float(np.mean(below + 0.5 * (upto - below)) / len(negative))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", choices=sorted(LOADERS), default="locomo",
                        help="how to read --data (default locomo)")
    parser.add_argument("--data", required=True, help="as for `rmm bench retrieval`")
    parser.add_argument("--convs", default=None,
                        help="conversation positions, e.g. 0-1 (two or more: each question "
                             "is also asked of the next conversation's user)")
    parser.add_argument("--json", dest="json_out", default=None, help="write figures here")
    parser.add_argument("--markdown", default=None, metavar="PATH",
                        help="write the figures as a markdown section into PATH (replacing "
                             "the previous one of this dataset)")


def run(args: argparse.Namespace) -> int:
    convs = load_args(args.dataset, args.data, parse_range(args.convs) if args.convs else None)
    if convs is None:
        return BAD_DATA
    figures = {"dataset": args.dataset, "command": command_line(args),
               "questions": sum(len(c.questions) for c in convs),
               "calls": {name: t.figures() for name, t in measure(convs).items()}}
    print(report(figures))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=2))
    if args.markdown:
        write_markdown(args.markdown, args.dataset, markdown(figures), bench="scores")
    return 0


def measure(convs: Sequence[Conversation]) -> dict[str, Tally]:
    """Each call's tally over every question of `convs`, asked of its own user and of the
    next conversation's (when there are two or more)."""
    tallies = {name: Tally() for name in CALLS}
    with tempfile.TemporaryDirectory() as tmp:
        mem = ReflectiveMemory.open(str(Path(tmp) / "bench.sqlite"),
                                    embedder=default_embedder(), progress=False)
        for conv in convs:
            ingest(mem, conv)
        users = [c.sample_id for c in convs]
        for n, conv in enumerate(convs):
            asked = [(conv.sample_id, False)]
            if len(convs) > 1:
                asked.append((users[(n + 1) % len(users)], True))
            for q in progress(conv.questions, desc=f"{conv.sample_id} questions",
                              unit="question"):
                for user, elsewhere in asked:
                    for name, call in CALLS.items():
                        tallies[name].add(mem.search(q.question, user_id=user, **call),
                                          q.evidence, elsewhere)
        mem.close()
    return tallies


def summary_table(call: dict[str, Any]) -> list[list[str]]:
    columns = ("ties %", "AUC gold/other", "AUC gold/elsewhere", "90 % of gold from")
    return [["score", *columns],
            *([kind, *(f"{call[kind][c]:.1f}" if c == "ties %" else f"{call[kind][c]:.3f}"
                       for c in columns)] for kind in SCORES)]


def kept_table(call: dict[str, Any]) -> list[list[str]]:
    """Per threshold, the share of each group of hits it keeps (%), before and now."""
    return [["min_score", *(f"{g} {kind}" for g in GROUPS for kind in SCORES)],
            *([str(t), *(f"{call[kind]['kept %'][str(t)][g]:.1f}" for g in GROUPS
                         for kind in SCORES)] for t in THRESHOLDS)]


def notes(figures: dict[str, Any]) -> list[str]:
    first = next(iter(figures["calls"].values()))
    hits = first["hits"]
    return [f"{figures['dataset']}: {figures['questions']} questions; `search(max_words=1000)` "
            f"gave {hits['gold']} gold hits, {hits['other']} other hits and {hits['elsewhere']} "
            f"hits of the questions asked of another conversation. before: relevance capped "
            f"by the hits above; now: that match times what the n-th place keeps of it, "
            f"1 - {PLACE} x (1 - 1/n)."]


def report(figures: dict[str, Any]) -> str:
    lines = notes(figures)
    for name, call in figures["calls"].items():
        lines += ["", f"search({name}):", text_table(summary_table(call)), "",
                  "hits kept by min_score, %:", text_table(kept_table(call))]
    return "\n".join(lines)


def markdown(figures: dict[str, Any]) -> str:
    """The section of this dataset, between its markers."""
    from .report import machine, markers, version

    begin, end = markers(figures["dataset"], "scores")
    parts = [begin, f"#### What a threshold keeps: {TITLES.get(figures['dataset'], '')}".rstrip(),
             f"`{figures['command']}`; reflective-memory {version()}; {machine()}.",
             " ".join(notes(figures))]
    for name, call in figures["calls"].items():
        parts += [f"`search({name})`:", markdown_table(summary_table(call), bold="now"),
                  "Hits kept by `min_score`, %:", markdown_table(kept_table(call), bold=None)]
    return "\n\n".join([*parts, end])


def command_line(args: argparse.Namespace) -> str:
    """The command of this run, without where its outputs went."""
    parts = ["rmm bench scores", "--dataset", args.dataset, "--data", shlex.quote(args.data)]
    if args.convs:
        parts += ["--convs", args.convs]
    return " ".join(parts)
