"""The retrieval bench's figures as text for the terminal and as a markdown section that
`--markdown` writes into a page (docs/benchmarks.md) between markers, so a rerun replaces it."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .metrics import CATEGORY_METRICS, METRICS, PROBES
from .tally import CATEGORIES

PRODUCT = "rmm (default)"
RANK_BY = "Rtok@1000"
"""The column that picks the best baseline (the strict budget a context can spare)."""
SIZE_COLUMNS = ("words/hit p50", "words/hit p95", "words/unit")

Rows = Mapping[str, Mapping[str, Any]]


def best_baseline(rows: Rows) -> str | None:
    """The baseline row with the highest RANK_BY (None when the run had no baseline)."""
    others = [name for name in rows if name != PRODUCT]
    return max(others, key=lambda name: rows[name][RANK_BY]) if others else None


def best_of_each_unit(rows: Rows) -> list[str]:
    """The product, then for each baseline unit its retriever with the highest RANK_BY."""
    units: dict[str, str] = {}
    for name in rows:
        unit = name.split("/")[0]
        if name != PRODUCT and (unit not in units or rows[name][RANK_BY] >
                                rows[units[unit]][RANK_BY]):
            units[unit] = name
    return [PRODUCT, *units.values()]


def probe_columns(rows: Rows) -> list[str]:
    """The probe metrics the run measured (none on datasets without probes)."""
    return [p.column for p in PROBES.values() if p.column in rows[PRODUCT]]


def format_table(rows: Rows) -> str:
    """Every row and column of the run, for the terminal."""
    columns = [*METRICS, *SIZE_COLUMNS]
    head = f"{'pipeline':<16}" + "".join(f"{c:>14}" for c in columns)
    lines = [head, "-" * len(head)]
    for name, row in rows.items():
        lines.append(f"{name:<16}" + "".join(f"{row[c]:>14.1f}" for c in columns))
    return "\n".join(lines)


def category_table(rows: Rows, labels: Mapping[str, str]) -> list[list[str]]:
    """Header and one line per question category: the product and the best baseline at
    CATEGORY_METRICS."""
    shown = [PRODUCT] + [b for b in [best_baseline(rows)] if b]
    head = ["category", "questions", *(f"{name} {m}" for name in shown
                                        for m in CATEGORY_METRICS)]
    body = []
    for category, figures in rows[PRODUCT][CATEGORIES].items():
        body.append([labels.get(category, category) or "(none)", str(figures["questions"]),
                     *(f"{rows[name][CATEGORIES][category][m]:.1f}" for name in shown
                       for m in CATEGORY_METRICS)])
    return [head, *body]


def probe_table(rows: Rows) -> list[list[str]]:
    """Header and one line per pipeline: each probe metric of the run."""
    columns = probe_columns(rows)
    head = ["pipeline", *(f"{c} ({rows[PRODUCT][f'{c} probes']} probes)" for c in columns)]
    return [head, *([name, *(f"{rows[name][c]:.1f}" for c in columns)] for name in rows)]


def text_table(table: list[list[str]]) -> str:
    """A table for the terminal: first column left, the others right-aligned."""
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(line, widths))) for line in table]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])


def markdown_table(table: list[list[str]], bold: str | None = PRODUCT) -> str:
    """`table` (header first) in markdown, the line named `bold` in bold."""
    lines = [table[0], ["---"] * len(table[0]),
             *([f"**{line[0]}**" if line[0] == bold else line[0], *line[1:]]
               for line in table[1:])]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def main_table(rows: Rows) -> list[list[str]]:
    """The product and the best retriever of each baseline unit, every column."""
    return [["pipeline", *METRICS, *SIZE_COLUMNS],
            *([name, *(f"{rows[name][c]:.1f}" for c in METRICS),
               *(f"{rows[name][c]:,.0f}" for c in SIZE_COLUMNS)]
              for name in best_of_each_unit(rows))]


def machine() -> str:
    """Cores, memory and CPU model as /proc tells them (os.cpu_count() elsewhere)."""
    cpu = _read("/proc/cpuinfo")
    cores = len(re.findall(r"^processor\s*:", cpu, re.M)) or os.cpu_count() or 0
    model = re.search(r"^model name\s*:\s*(.+)$", cpu, re.M)
    mem = re.search(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), re.M)
    memory = f"{int(mem[1]) / 2**20:.1f} GiB" if mem else "memory unknown"
    return f"{cores} cores, {memory}, CPU {model[1].strip() if model else 'unknown'}"


def version() -> str:
    """The installed package's version (the source tree's when it is not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("reflective-memory")
    except PackageNotFoundError:
        from .. import __version__
        return __version__


def markers(key: str, bench: str = "retrieval") -> tuple[str, str]:
    """The comments around the section of `key` of `rmm bench BENCH`: what a rerun finds and
    replaces."""
    return f"<!-- bench-{bench}:{key}:begin -->", f"<!-- bench-{bench}:{key}:end -->"


def markdown_section(key: str, command: str, rows: Rows, notes: list[str],
                     labels: Mapping[str, str]) -> str:
    """The run's figures as markdown between the markers of `key`."""
    begin, end = markers(key)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [begin,
             f"`{command}`\n\n{when}; reflective-memory {version()}; {machine()}. "
             f"{notes[0]} Percentages; Rtok is strict. The product and, for each baseline "
             f"unit, its best retriever by {RANK_BY} (`--json` holds every row):",
             markdown_table(main_table(rows))]
    best = best_baseline(rows)
    parts += [f"Per question category, the product and the best baseline by {RANK_BY}"
              f"{f' ({best})' if best else ''}:", markdown_table(category_table(rows, labels),
                                                                bold=None)]
    if probe_columns(rows):
        parts += [PROBE_NOTE, markdown_table(probe_table(rows))]
    parts += [*notes[1:], end]
    return "\n\n".join(parts)


PROBE_NOTE = ("Probes, strict, in the first 1,000 words: **update first** is the share of "
              "knowledge-update probes whose updated message comes (in rank order) before "
              "the original one, a missing update counting 0; **both sides** the share of "
              "contradiction probes with a message of each statement in context.")


def write_markdown(path: str | Path, key: str, section: str, bench: str = "retrieval") -> None:
    """Put `section` in the file at `path` in place of the previous one of `key` (between
    its markers); append it when there is none, create the file when it is missing."""
    path = Path(path)
    text = path.read_text() if path.exists() else ""
    begin, end = markers(key, bench)
    found = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if found.search(text):
        text = found.sub(lambda _: section, text, count=1)
    else:
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + section + "\n"
    path.write_text(text)


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""
