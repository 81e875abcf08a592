"""`rmm bench excerpts`: whether the excerpts `search` cuts later hits to keep the answer.

Each question is searched the way the adapters do (`search(max_words=1000)`). For every hit
cut to an excerpt (`rmm_core.read.excerpt`) whose memory's text holds some of the gold
answer's content words (`tokenize` with the English stemmer), the bench takes the share of
those answer tokens the excerpt keeps, against two cuts of the same number of words of the
memory's text: a random contiguous run (mean of DRAWS seeded draws) and its first words (the
head). A cut that keeps the meaning keeps more of the answer than either.

`--dataset updates` reads the non-English cases of `rmm_core/data/updates_dev.jsonl` (or
`--data`), each a fresh user of three sessions; the words of its `current` turns stand in for
the answer. Their memories are short: the bench says so when no hit of theirs is cut.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..language.tokens import english_stemmer, tokenize
from ..memory import ReflectiveMemory
from ..models.embed import Embedder, default_embedder
from ..ops.commands import BAD_DATA
from ..ops.progress import progress
from ..read.context import date_head, hit_text
from ..types import MemoryHit, Turn
from .datasets import CATEGORY_LABELS, LOADERS, load_args
from .records import Conversation, Question, Session, ingest
from .report import markdown_table, text_table, write_markdown
from .retrieval import parse_range

MAX_WORDS = 1000
"""The budget of the search measured: what the adapters ask for."""
DRAWS = 20
"""Random cuts drawn per excerpted hit."""
CUTS = ("excerpt", "random", "head")
UPDATES = "updates"
TITLES = {"locomo": "LoCoMo", "beam": "BEAM", UPDATES: "the update set"}
"""A dataset's name in its section's heading (a JSON Lines file: the file's name)."""
"""The dataset name of the non-English cases of the packaged update set."""


@dataclass(frozen=True, slots=True)
class Kept:
    """One excerpted hit: the share of the answer's tokens (of those its memory holds) that
    each cut keeps, and the excerpt's and the memory's lengths in words."""

    category: str
    excerpt: float
    random: float
    head: float
    words: int
    whole: int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", choices=[*sorted(LOADERS), UPDATES], default="locomo",
                        help="how to read --data (default locomo); updates: the non-English "
                             "cases of the packaged update set")
    parser.add_argument("--data", default=None,
                        help="locomo: the JSON file; beam: a track directory like 100K; "
                             "jsonl: the file; updates: a case file (default: the packaged one)")
    parser.add_argument("--convs", default=None,
                        help="conversation positions in the dataset's order, e.g. 0-4 or 0,2")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random cuts")
    parser.add_argument("--json", dest="json_out", default=None, help="write figures here")
    parser.add_argument("--markdown", default=None, metavar="PATH",
                        help="write the figures as a markdown section into PATH (replacing "
                             "the previous one of this dataset)")


def run(args: argparse.Namespace) -> int:
    select = parse_range(args.convs) if args.convs else None
    convs = _load(args.dataset, args.data, select)
    if convs is None:
        return BAD_DATA
    figures = evaluate(convs, default_embedder(), CATEGORY_LABELS.get(args.dataset, {}),
                       args.seed)
    figures = {"dataset": args.dataset, "data": args.data, "command": command_line(args),
               **figures}
    print(report(figures))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=2, ensure_ascii=False))
    if args.markdown:
        write_markdown(args.markdown, args.dataset, markdown(figures), bench="excerpts")
    return 0


def _load(dataset: str, data: str | None, select: list[int] | None
          ) -> list[Conversation] | None:
    """The conversations to measure; None, with the reason on stderr, when they cannot be
    read."""
    if dataset != UPDATES:
        if data is None:
            print(f"rmm bench: --data is required with --dataset {dataset}", file=sys.stderr)
            return None
        return load_args(dataset, data, select)
    from .records import pick
    from .supersede_search import load_cases

    try:
        cases = [c for c in load_cases(data) if c.lang != "en"]
        return pick([update_conversation(c) for c in cases], select, "case")
    except (InvalidInputError, FileNotFoundError) as exc:
        print(f"rmm bench: cannot read {data or 'the update cases'}: {exc}", file=sys.stderr)
        return None


def update_conversation(case: Any) -> Conversation:
    """An update case as a conversation of its own user: its three sessions and its
    question, whose answer is the text of its `current` turns (category: its language)."""
    sessions = [Session(f"{case.id}-s{n}", datetime.fromisoformat(when),
                        [Turn(t["speaker"], t["text"], t["id"]) for t in turns])
                for n, (when, turns) in enumerate(case.sessions, 1)]
    answer = " ".join(t.text for s in sessions for t in s.turns if t.id in case.current)
    speakers = tuple(sorted({t.speaker for s in sessions for t in s.turns}))
    return Conversation(case.id, speakers, sessions,
                        [Question(case.question, answer, case.current, case.lang)])


def command_line(args: argparse.Namespace) -> str:
    """The command of this run, without where its outputs went."""
    parts = ["rmm bench excerpts", "--dataset", args.dataset]
    if args.data:
        parts += ["--data", shlex.quote(args.data)]
    if args.convs:
        parts += ["--convs", args.convs]
    if args.seed:
        parts += ["--seed", str(args.seed)]
    return " ".join(parts)


def excerpt_of(hit: MemoryHit) -> str | None:
    """The words of the memory an excerpted hit still carries (its date head left off); None
    when the hit is whole (a note after the whole text does not make it an excerpt)."""
    memory = hit.memory
    if hit.text == hit_text(memory) or memory.text in hit.text:
        return None
    head = date_head(memory)
    return hit.text[len(head):] if head and hit.text.startswith(head) else hit.text


def answer_tokens(answer: str, stemmer: Callable | None) -> set[str]:
    """The answer's content tokens: stop words dropped, stemmed."""
    return set(tokenize([answer], stemmer)[0])


def shares(excerpt: str, whole: str, answer: set[str], stemmer: Callable | None,
           rng: np.random.Generator, draws: int = DRAWS) -> tuple[float, float, float] | None:
    """The share of the `answer` tokens in `whole` that the excerpt, a random contiguous run
    of as many words (mean of `draws`) and the first as many words keep; None when `whole`
    holds none of them."""
    words = whole.split()
    said = [set(t) for t in tokenize(words, stemmer)]  # no token spans a space
    held = answer & set().union(*said)
    if not held:
        return None
    size = min(len(excerpt.split()), len(words))

    def kept(start: int) -> float:
        return len(held & set().union(*said[start:start + size])) / len(held)

    starts = rng.integers(0, len(words) - size + 1, draws)
    in_excerpt = held.intersection(tokenize([excerpt], stemmer)[0])
    return len(in_excerpt) / len(held), float(np.mean([kept(s) for s in starts])), kept(0)


def measure(hits: Iterable[MemoryHit], answer: str, category: str, stemmer: Callable | None,
            rng: np.random.Generator) -> tuple[int, list[Kept]]:
    """The excerpted hits among `hits` (their count) and the cuts' shares of those whose
    memory holds some of the answer."""
    tokens = answer_tokens(answer, stemmer)
    cut, out = 0, []
    for hit in hits:
        excerpt = excerpt_of(hit)
        if excerpt is None:
            continue
        cut += 1
        found = shares(excerpt, hit.memory.text, tokens, stemmer, rng) if tokens else None
        if found is not None:
            out.append(Kept(category, *found, len(excerpt.split()),
                            len(hit.memory.text.split())))
    return cut, out


def evaluate(convs: Sequence[Conversation], embedder: Embedder, labels: dict[str, str],
             seed: int = 0) -> dict[str, Any]:
    """Ingest the conversations into a fresh store on a temporary SQLite file, search every
    question and measure its excerpted hits."""
    stemmer, rng = english_stemmer(), np.random.default_rng(seed)
    kept: list[Kept] = []
    questions = hits = cut = with_cut = 0
    with tempfile.TemporaryDirectory() as tmp:
        mem = ReflectiveMemory.open(str(Path(tmp) / "bench.sqlite"), embedder=embedder,
                                    progress=False)
        try:
            for conv in convs:
                ingest(mem, conv)
                for q in progress(conv.questions, desc=f"{conv.sample_id} questions",
                                  unit="question"):
                    found = list(mem.search(q.question, user_id=conv.sample_id,
                                            max_words=MAX_WORDS))
                    label = labels.get(str(q.category), str(q.category)) or "(none)"
                    n, rows = measure(found, q.answer, label, stemmer, rng)
                    questions, hits, cut = questions + 1, hits + len(found), cut + n
                    with_cut += n > 0
                    kept += rows
        finally:
            mem.close()
    categories = sorted({k.category for k in kept})
    return {"conversations": len(convs), "questions": questions, "hits": hits,
            "excerpted": cut, "questions with an excerpt": with_cut, "draws": DRAWS,
            "seed": seed, **summary(kept),
            "categories": {c: summary([k for k in kept if k.category == c])
                           for c in categories}}


def summary(kept: Sequence[Kept]) -> dict[str, Any]:
    """Hits considered, each cut's mean share, the excerpt's paired gain over the random cut
    (with a 95 % normal interval's half-width) and the mean lengths in words."""
    nan = float("nan")
    out: dict[str, Any] = {"considered": len(kept)}
    for name in CUTS:
        out[name] = float(np.mean([getattr(k, name) for k in kept])) if kept else nan
    gain = np.array([k.excerpt - k.random for k in kept])
    out["gain over random"] = float(gain.mean()) if kept else nan
    out["gain 95% half-width"] = (1.96 * float(gain.std(ddof=1)) / np.sqrt(len(gain))
                                  if len(gain) > 1 else nan)
    out["excerpt words"] = float(np.mean([k.words for k in kept])) if kept else nan
    out["memory words"] = float(np.mean([k.whole for k in kept])) if kept else nan
    return out


def table(figures: dict[str, Any]) -> list[list[str]]:
    """Header, the whole run's line and one line per question category."""
    head = ["category", "hits", *(f"{c} keeps" for c in CUTS), "excerpt - random",
            "words (of)"]
    rows = {"all": figures, **figures["categories"]}
    return [head, *([name, str(row["considered"]), *(f"{row[c]:.3f}" for c in CUTS),
                     f"{row['gain over random']:+.3f} ± {row['gain 95% half-width']:.3f}",
                     f"{row['excerpt words']:.0f} ({row['memory words']:.0f})"]
                    for name, row in rows.items())]


def notes(figures: dict[str, Any]) -> list[str]:
    """What was measured, in prose, and a plain statement when no hit was cut."""
    lines = [f"{figures['dataset']}: {figures['conversations']} conversations, "
             f"{figures['questions']} questions, {figures['hits']} hits of "
             f"`search(max_words={MAX_WORDS})`, {figures['excerpted']} of them excerpts "
             f"({figures['questions with an excerpt']} questions); {figures['considered']} "
             f"excerpts whose memory holds some of the answer's content words are measured."]
    if not figures["excerpted"]:
        lines.append("No hit was cut to an excerpt: the memories are too short for a cut, so "
                     "there is nothing to measure here.")
    else:
        lines.append(f"Share of those answer words each cut keeps; random: a contiguous run of "
                     f"the memory's words as long as the excerpt (mean of {figures['draws']} "
                     f"draws, seed {figures['seed']}); head: the memory's first as many words.")
    return lines


def report(figures: dict[str, Any]) -> str:
    """The figures as the bench prints them."""
    lines = notes(figures)
    if figures["considered"]:
        lines += ["", text_table(table(figures))]
    return "\n".join(lines)


def markdown(figures: dict[str, Any]) -> str:
    """The section "Excerpts keep the answer" of this dataset, between its markers."""
    from .report import machine, markers, version

    begin, end = markers(figures["dataset"], "excerpts")
    title = TITLES.get(figures["dataset"]) or Path(str(figures.get("data"))).name
    parts = [begin, f"#### Excerpts keep the answer: {title}",
             f"`{figures['command']}`; reflective-memory {version()}; {machine()}.",
             " ".join(notes(figures))]
    if figures["considered"]:
        parts.append(markdown_table(table(figures), bold="all"))
    return "\n\n".join([*parts, end])
