"""`rmm`: the command line. Operator commands live in `commands`; each benchmark is a module
with `add_arguments` and `run`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from .ops.commands import EXIT_CODES, add_commands, add_db_argument
from .ops.commands import run as run_command
from .ops.progress import ENV

BENCHES = {
    "retrieval": ("rmm_core.bench.retrieval", "retrieval quality against fixed-unit baselines "
                  "(LoCoMo, BEAM or your own JSON Lines)"),
    "speed": ("rmm_core.bench.speed", "search latency on a large bank against raw faiss"),
    "rerank": ("rmm_core.bench.rerank", "REINFORCE reranker trained with oracle citations"),
    "extract": ("rmm_core.bench.extract", "memory extraction vs LoCoMo's per-session facts"),
    "answer": ("rmm_core.bench.answer", "LLM answers judged against gold answers (LoCoMo J "
               "score), with the memory's context, plain passages or the whole conversation"),
    "context": ("rmm_core.bench.context", "SCM context builder vs rank-order filling on LoCoMo"),
    "links": ("rmm_core.bench.links", "A-MEM link following on LoCoMo multi-hop questions"),
    "supersede": ("rmm_core.bench.supersede", "supersession rules on a labelled set of memory "
                  "pairs, against embedding similarity"),
    "endings": ("rmm_core.bench.endings", "every change recorded on write in real "
                "conversations, listed to be read"),
    "excerpts": ("rmm_core.bench.excerpts", "answer words search's excerpts keep, against cuts"),
    "scores": ("rmm_core.bench.scores", "what a min_score threshold keeps: gold hits, other "
               "hits, hits of questions asked elsewhere, against the replaced score"),
    "paired": ("rmm_core.bench.paired", "ingest and search time of a setting against the "
               "defaults, in turn in one process"),
    "mcp": ("rmm_core.bench.mcp_speed", "search latency through `rmm mcp` (stdio and HTTP) "
            "against in-process search"),
    "ui": ("rmm_core.bench.ui", "`rmm ui` page times on a large bank: memory pages, a "
           "query's breakdown, search with and without explain"),
}
"""Benchmark name -> (module with add_arguments/run, one-line help)."""
BENCH_ALIASES = {"retrieval": ["locomo"]}
"""Other names a benchmark answers to (`rmm bench locomo` predates the other datasets)."""


class _BenchParser(argparse.ArgumentParser):
    """A benchmark's parser: its module (with the memory and models it imports) loads when
    this benchmark's arguments are parsed, so that `rmm --help` and the commands stay light."""

    module = ""

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None) -> Any:
        if self.module:
            module, self.module = self.module, ""
            importlib.import_module(module).add_arguments(self)
        return super().parse_known_args(args, namespace)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rmm", description="Reflective memory for LLM agents: inspect, search, export, "
        "import and forget what a store holds, and run the benchmarks.",
        epilog=f"Run `rmm COMMAND --help` for an example of each.\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_db_argument(parser)
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bars (also: RMM_PROGRESS=0; default: on a terminal)")
    commands = parser.add_subparsers(dest="command", required=True)
    add_commands(commands)
    bench = commands.add_parser("bench", help="run a benchmark and print its figures")
    benches = bench.add_subparsers(dest="bench", required=True, parser_class=_BenchParser)
    for name, (module, help_text) in BENCHES.items():
        sub = benches.add_parser(name, help=help_text, description=help_text,
                                 aliases=BENCH_ALIASES.get(name, []))
        sub.set_defaults(_module=module)
        sub.module = module
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    # the library's own deprecations (an old --set name) reach the operator on stderr
    warnings.filterwarnings("default", category=DeprecationWarning, module=r"rmm_core\.")
    if args.no_progress:
        os.environ[ENV] = "0"
    if hasattr(args, "_command"):
        return run_command(args)
    return int(importlib.import_module(args._module).run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
