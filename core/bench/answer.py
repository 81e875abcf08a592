"""`rmm bench answer`: how often an LLM answers correctly with the memory's context, beside
plain passages at the same word budget and the whole conversation cut to its window.

The same reader answers each question from each context and a judge (the reader unless
named apart) grades the answer: against the gold answer on LoCoMo (its "J" score,
categories 1-4) and on your own JSON Lines, by each rubric item on BEAM's probes. Every
graded answer goes to `--results` at once, so a killed run continues where it stopped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError, LLMError, MissingDependencyError, RMMError
from ..models import prompts
from ..models.embed import default_embedder
from ..models.llm import MeteredLLM, as_llm
from ..ops.commands import BAD_DATA, REFUSED, USAGE
from ..ops.progress import progress
from ..text import count_tokens
from .answer_contexts import (
    CONTEXTS,
    MEMORY_WORDS,
    PASSAGES,
    FullContext,
    MemoryContext,
    PassagesContext,
)
from .answer_grade import judge, read
from .answer_questions import Item, items
from .answer_report import markdown_section, summarise, text_report
from .answer_results import Results
from .baselines import UNITS
from .datasets import CATEGORY_LABELS, LOADERS, load
from .llm_args import add_llm_arguments, llm_from_args
from .report import write_markdown
from .retrieval import parse_range, parse_setting

DEFAULT_CONTEXTS = "memory,passages,full"
MAX_TOKENS = 128
"""Completion cap of the reader and the judge: answers are short."""
WINDOW = 4096
"""The reader's context window in tokens unless `--window` (the local model's default)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", choices=sorted(LOADERS), default="locomo",
                        help="how to read --data (default locomo)")
    parser.add_argument("--data", required=True,
                        help="locomo: locomo10.json (or the dev file); beam: a track directory "
                             "like 100K; jsonl: your file (see rmm bench retrieval)")
    parser.add_argument("--convs", default=None, help="conversation positions, e.g. 0-4 or 0,2")
    parser.add_argument("--limit", type=int, default=None, metavar="N",
                        help="ask N questions, drawn in turn from each category (default all)")
    parser.add_argument("--seed", type=int, default=0, help="the draw of --limit (default 0)")
    add_llm_arguments(parser, max_tokens=MAX_TOKENS)
    add_llm_arguments(parser, role="judge")
    parser.add_argument("--contexts", default=DEFAULT_CONTEXTS,
                        help=f"contexts to compare, of {list(CONTEXTS)} (default all)")
    parser.add_argument("--max-words", type=int, default=MEMORY_WORDS,
                        help=f"words of memory and of passages per question (default "
                             f"{MEMORY_WORDS}, the adapters' budget)")
    parser.add_argument("--passages", choices=sorted(UNITS), default=PASSAGES,
                        help=f"the fixed unit of the passages context (default {PASSAGES})")
    parser.add_argument("--window", type=int, default=WINDOW, metavar="TOKENS",
                        help=f"the reader's context window, which the full conversation is "
                             f"cut to (default {WINDOW}; also the local model's)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="MemoryConfig setting of the memory, by dotted name (repeatable)")
    parser.add_argument("--results", default=None, metavar="PATH",
                        help="JSON Lines file of graded answers; a rerun continues it")
    parser.add_argument("--report", action="store_true",
                        help="print (and write) the figures of --results as they are, "
                             "asking nothing more")
    parser.add_argument("--retries", type=int, default=1,
                        help="tries again after a failed LLM call (default 1)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds an LLM call may take (default 600)")
    parser.add_argument("--prices", default=None, metavar="IN,OUT",
                        help="reader's USD per million prompt and completion tokens")
    parser.add_argument("--json", dest="json_out", default=None, help="write figures here")
    parser.add_argument("--markdown", default=None, metavar="PATH",
                        help="write the figures as a markdown section into PATH, replacing "
                             "this dataset's previous one (e.g. docs/benchmarks.md)")


def run(args: argparse.Namespace) -> int:
    try:
        convs = load(args.dataset, args.data, parse_range(args.convs) if args.convs else None)
        chosen = items(args.dataset, args.data, convs, args.limit, args.seed)
    except (InvalidInputError, FileNotFoundError) as exc:
        print(f"rmm bench answer: cannot read {args.data} as {args.dataset}: {exc}",
              file=sys.stderr)
        return BAD_DATA
    try:
        names = _contexts(args.contexts)
        prices = _prices(args.prices)
        if args.report and not (args.results and Path(args.results).is_file()):
            raise InvalidInputError("--report needs the --results file of a run")
        reader = llm_from_args(args, n_ctx=args.window)
        if reader is None:
            raise InvalidInputError("name the reader: --llm-url URL --llm-model NAME, "
                                    "--langchain MODULE:NAME or --local-llm")
        judge_llm = llm_from_args(args, role="judge", n_ctx=args.window, shared=reader)
    except (InvalidInputError, MissingDependencyError) as exc:
        print(f"rmm bench answer: {exc}", file=sys.stderr)
        return USAGE
    meter = MeteredLLM(as_llm(reader), timeout=args.timeout, workers=1)
    graders = (meter, meter if judge_llm in (None, reader) else
               MeteredLLM(as_llm(judge_llm), timeout=args.timeout, workers=1))
    start = time.perf_counter()
    try:
        results = Results(args.results, describe(args, reader, judge_llm or reader))
        if not args.report:
            evaluate(chosen, names, graders, results, args)
    except LLMError as exc:
        print(f"rmm bench answer: stopped, the LLM fails: {exc}", file=sys.stderr)
        return REFUSED
    except KeyboardInterrupt:
        kept = f"in {args.results}; the same command continues" if args.results else \
            "nowhere (no --results)"
        print(f"rmm bench answer: interrupted; the graded answers are kept {kept}",
              file=sys.stderr)
        return REFUSED
    except RMMError as exc:
        print(f"rmm bench answer: {exc}", file=sys.stderr)
        return BAD_DATA
    wall = time.perf_counter() - start
    done = [results.records[f"{item.key}/{name}"] for item in chosen for name in names
            if f"{item.key}/{name}" in results]
    rows = summarise(done, names, prices)
    labels = CATEGORY_LABELS.get(args.dataset, {})
    notes = summary(args, chosen, rows, reader, judge_llm or reader, wall)
    print(" ".join(notes))
    print(text_report(rows, labels))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2))
    if args.markdown:
        write_markdown(args.markdown, args.dataset, markdown_section(
            args.dataset, command_line(args), rows, labels, notes), bench="answer")
    return 0


def evaluate(chosen: list[Item], names: list[str], graders: tuple[Any, Any],
             results: Results, args: argparse.Namespace) -> None:
    """Grade every (question, context) not yet in `results`, question by question so that a
    partial run has each context on the same questions; a conversation is ingested when the
    first of its questions still to do comes."""
    embedder = default_embedder()
    reserve = count_tokens(prompts.READ_AND_ANSWER) + args.max_tokens
    builders = {"memory": lambda: MemoryContext(
                    embedder, dict(parse_setting(s) for s in args.set), args.max_words),
                "passages": lambda: PassagesContext(embedder, args.max_words, args.passages),
                "full": lambda: FullContext(args.window, reserve)}
    contexts = [builders[name]() for name in names]
    pending = [i for i in chosen if any(f"{i.key}/{n}" not in results for n in names)]
    prepared: set[str] = set()
    try:
        for item in progress(pending, desc="questions", unit="question"):
            if item.conv.sample_id not in prepared:
                for context in contexts:
                    context.prepare(item.conv)
                prepared.add(item.conv.sample_id)
            for context in contexts:
                key = f"{item.key}/{context.name}"
                if key not in results:
                    results.add(key, grade(item, context, graders, args.retries))
                    _stop_when_unreachable(results, key)
    finally:
        for context in contexts:
            context.close()


def grade(item: Item, context: Any, graders: tuple[Any, Any], retries: int) -> dict[str, Any]:
    """One context's record for one question: its size, the answer and the grade."""
    q = item.question
    t0 = time.perf_counter()
    built = context.build(item.conv, q.question)
    build_s = time.perf_counter() - t0
    graded = read(graders[0], q.question, built.text, retries)
    judge(graders[1], graded, q.question, q.answer, item.category, item.rubric, retries)
    return {"conversation": item.conv.sample_id, "question": q.question, "gold": q.answer,
            "category": item.category, "context": context.name,
            "context_words": built.words, "context_tokens": built.tokens,
            "build_s": build_s, **graded.as_record()}


def _stop_when_unreachable(results: Results, key: str) -> None:
    """Stop at once when the very first LLM call of a results file fails (a wrong URL, a
    missing key): every later question would fail the same way."""
    record = results.records[key]
    failed = [e for e in record["errors"] if e.startswith(("reader failed", "judge failed"))]
    if len(results.records) == 1 and failed and \
            (record["answer"] is None or record["score"] is None):
        raise LLMError(failed[-1])


def describe(args: argparse.Namespace, reader: Any, judge_llm: Any) -> dict[str, Any]:
    """What makes two runs comparable: a results file continues only the same run."""
    return {"dataset": args.dataset, "data": str(args.data), "convs": args.convs,
            "limit": args.limit, "seed": args.seed, "reader": llm_name(reader),
            "judge": llm_name(judge_llm), "max_words": args.max_words,
            "passages": args.passages, "window": args.window, "set": sorted(args.set),
            "max_tokens": args.max_tokens, "prompts": prompts_digest()}


def prompts_digest() -> str:
    """Which wording of the reader's and the judge's prompts graded the answers."""
    text = prompts.READ_AND_ANSWER + prompts.GRADE_ANSWER + prompts.GRADE_RUBRIC
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def llm_name(llm: Any) -> str:
    """An LLM as the report names it: the endpoint and model, the GGUF file, or the class."""
    if hasattr(llm, "url") and hasattr(llm, "model"):
        return f"{llm.model} at {llm.url}"
    if hasattr(llm, "model_path"):
        return Path(llm.model_path).name
    model = getattr(llm, "model_name", None) or getattr(llm, "model", None)
    return f"{type(llm).__name__}({model})" if isinstance(model, str) else type(llm).__name__


def summary(args: argparse.Namespace, chosen: list[Item], rows: dict[str, Any], reader: Any,
            judge_llm: Any, wall: float) -> list[str]:
    """The run's prose: what was asked, of whom, with which contexts, and what it took."""
    done = max((row["questions"] for row in rows.values()), default=0)
    grading = "by each rubric item" if args.dataset == "beam" else \
        "CORRECT or WRONG against the gold answer (J score)"
    shown = {"memory": f"memory: search within {args.max_words} words",
             "passages": f"passages: {args.passages}/fused within {args.max_words} words",
             "full": f"full: the conversation cut to a {args.window}-token window"}
    return [f"{args.dataset}: {done} of {len(chosen)} questions graded, {grading}; reader "
            f"{llm_name(reader)}, judge {llm_name(judge_llm)}; contexts "
            f"{'; '.join(shown[name] for name in rows)}.",
            f"Reader and judge time over the graded answers: "
            f"{sum(row['llm s'] for row in rows.values()) / 60:.0f} min; this invocation "
            f"{wall / 60:.1f} min."]


def command_line(args: argparse.Namespace) -> str:
    """The command of this run, without where its outputs went."""
    parts = ["rmm bench answer", "--dataset", args.dataset, "--data", shlex.quote(args.data)]
    for flag, value in (("--convs", args.convs), ("--limit", args.limit),
                        ("--llm-url", args.llm_url), ("--llm-model", args.llm_model),
                        ("--langchain", args.langchain),
                        ("--judge-llm-url", args.judge_llm_url),
                        ("--judge-llm-model", args.judge_llm_model),
                        ("--judge-langchain", args.judge_langchain)):
        if value is not None:
            parts += [flag, shlex.quote(str(value))]
    parts += ["--local-llm"] if args.local_llm else []
    parts += ["--judge-local-llm"] if args.judge_local_llm else []
    if args.contexts != DEFAULT_CONTEXTS:
        parts += ["--contexts", args.contexts]
    if args.max_words != MEMORY_WORDS:
        parts += ["--max-words", str(args.max_words)]
    if args.max_tokens != MAX_TOKENS:
        parts += ["--max-tokens", str(args.max_tokens)]
    if args.window != WINDOW:
        parts += ["--window", str(args.window)]
    for setting in args.set:
        parts += ["--set", shlex.quote(setting)]
    return " ".join(parts)


def _contexts(spec: str) -> list[str]:
    names = [n for n in spec.split(",") if n]
    unknown = sorted(set(names) - set(CONTEXTS))
    if unknown or not names:
        raise InvalidInputError(f"unknown context(s) {unknown}; choose among {list(CONTEXTS)}")
    return names


def _prices(spec: str | None) -> tuple[float, float] | None:
    if spec is None:
        return None
    try:
        given, taken = (float(p) for p in spec.split(","))
    except ValueError:
        raise InvalidInputError(f"--prices needs IN,OUT (USD per million tokens), got "
                                f"{spec!r}") from None
    return given, taken
