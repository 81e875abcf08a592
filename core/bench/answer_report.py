"""The figures of `rmm bench answer`: per context, the score (LoCoMo's J, a rubric's mean) over
all questions and per category, with what each context cost the reader; as text for the
terminal and as a markdown section (`--markdown`) that a rerun replaces."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .report import machine, markdown_table, markers, text_table, version

Record = Mapping[str, Any]
COLUMNS = ("questions", "score %", "failed", "unjudged", "context words/q", "context tokens/q",
           "prompt tokens/q", "reader calls", "reader s p50", "judge calls")


def summarise(records: Iterable[Record], contexts: list[str],
              prices: tuple[float, float] | None = None) -> dict[str, dict[str, Any]]:
    """Context -> its figures over `records`: the mean score (a failed reader or an unusable
    verdict counts 0, and is counted apart), sizes, calls, latency, cost, and per category
    the score."""
    by_context: dict[str, list[Record]] = {c: [] for c in contexts}
    for record in records:
        if record["context"] in by_context:
            by_context[record["context"]].append(record)
    return {name: _row(rows, prices) for name, rows in by_context.items() if rows}


def _row(rows: list[Record], prices: tuple[float, float] | None) -> dict[str, Any]:
    n = len(rows)
    categories: dict[str, list[float]] = {}
    for r in rows:
        categories.setdefault(r["category"], []).append(r["score"] or 0.0)
    row: dict[str, Any] = {
        "questions": n,
        "score %": 100 * float(np.mean([r["score"] or 0.0 for r in rows])),
        "failed": sum(r["answer"] is None for r in rows),
        "unjudged": sum(r["answer"] is not None and r["score"] is None for r in rows),
        "context words/q": float(np.mean([r["context_words"] for r in rows])),
        "context tokens/q": float(np.mean([r["context_tokens"] for r in rows])),
        "prompt tokens/q": float(np.mean([r["prompt_tokens"] for r in rows])),
        "reader calls": sum(r["reader_calls"] for r in rows),
        "reader s p50": float(np.percentile([r["reader_s"] for r in rows], 50)),
        "judge calls": sum(r["judge_calls"] for r in rows),
        "llm s": sum(r["reader_s"] + r["judge_s"] for r in rows),
        "categories": {c: {"questions": len(s), "score %": 100 * float(np.mean(s))}
                       for c, s in sorted(categories.items())},
    }
    if prices:
        spent = sum(r["prompt_tokens"] * prices[0] + r["completion_tokens"] * prices[1]
                    for r in rows) / 1e6
        row["reader $/q"] = spent / n
    return row


def main_table(rows: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    """Header and one line per context: every column of `COLUMNS` (and the cost)."""
    columns = [*COLUMNS, *(["reader $/q"] if any("reader $/q" in r for r in rows.values())
                          else [])]
    return [["context", *columns],
            *([name, *(_cell(row[c]) for c in columns)] for name, row in rows.items())]


def category_table(rows: Mapping[str, Mapping[str, Any]], labels: Mapping[str, str]
                   ) -> list[list[str]]:
    """Header and one line per question category: its questions and each context's score."""
    names = list(rows)
    categories = sorted({c for row in rows.values() for c in row["categories"]})
    body = []
    for c in categories:
        first = next(row["categories"][c] for row in rows.values() if c in row["categories"])
        body.append([labels.get(c, c) or "(none)", str(first["questions"]),
                     *(_cell(rows[n]["categories"].get(c, {}).get("score %", float("nan")))
                       for n in names)])
    return [["category", "questions", *(f"{n} score %" for n in names)], *body]


def text_report(rows: Mapping[str, Mapping[str, Any]], labels: Mapping[str, str]) -> str:
    return "\n\n".join([text_table(main_table(rows)), "per question category:",
                        text_table(category_table(rows, labels))])


def markdown_section(key: str, command: str, rows: Mapping[str, Mapping[str, Any]],
                     labels: Mapping[str, str], notes: list[str]) -> str:
    """The run as markdown between the markers of `key` (bench `answer`)."""
    begin, end = markers(key, bench="answer")
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n\n".join([
        begin, f"`{command}`\n\n{when}; reflective-memory {version()}; {machine()}. "
               f"{' '.join(notes)}",
        markdown_table(main_table(rows), bold="memory"),
        "Per question category, the score of each context (%):",
        markdown_table(category_table(rows, labels), bold=None), end])


def _cell(value: Any) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float) and abs(value) < 0.1 and value:
        return f"{value:.4f}"
    return f"{value:,.1f}"
