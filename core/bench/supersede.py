"""`rmm bench supersede`: the supersession rules against a labelled set of memory pairs.

Each pair is an earlier and a later memory labelled "supersedes" (the later one changes the
earlier: a move, a new job, a rescheduled event, a number that changed, a preference that
flipped), "none" (a restatement, a related fact, a visit, someone else's fact, a plan or a
question) or "conflicts" (a denial against a positive statement). The bench prints precision,
recall and F1 of `find_changes` for "supersedes" and "conflicts", the confusion counts, one
row per signal turned off, and how well the embedder's cosine alone separates supersedes from
none (AUROC, and the F1 of its best threshold: tuned on the set itself, so a ceiling).

The set ships as `rmm_core/data/supersession.jsonl`, one pair per line:
`{"id", "family", "old": {"text", "speaker", "date"}, "new": {...}, "label", "part"?}`, where
`speaker` is one name or a list (a memory holding several speakers' lines) and `part` says
the old memory is superseded only in part.

`--through-search` measures instead through the public API, on whole conversations: a fresh
store per case, three sessions added, the question searched (`supersede_search`, whose set is
`rmm_core/data/updates_dev.jsonl`). Without it the command runs the pairwise rules as above.
`--sample N` keeps about N of those cases, stratified (changes and non-changes, English and
not, each in proportion), so that a slow run and its LLM-free twin see the same subset.

With an LLM (`--llm-url`, `--langchain` or `--local-llm`, the options of `llm_args`) each
case's memory is opened with it and `stages.judge_changes=True`, extraction and
reconciliation kept LLM-free (`stages.extraction='segment'`, `stages.reconciliation=
'threshold'`, `segmentation.kind='embedding'`): the only LLM calls are the change judge's
(`rmm_core.write.judge`), counted and timed in the figures' `llm` entry. Without one nothing
changes.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..models.embed import Embedder, default_embedder
from ..types import Memory, as_datetime
from ..write.supersede import SIGNALS, find_changes
from .llm_args import add_llm_arguments, llm_from_args

SET = files("rmm_core") / "data" / "supersession.jsonl"
LABELS = ("supersedes", "conflicts", "none")


@dataclass(frozen=True, slots=True)
class Pair:
    """One labelled pair: does `new` change `old`?"""

    id: str
    family: str
    old: Memory
    new: Memory
    label: str
    part: bool = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--through-search", action="store_true",
                        help="measure through add_session and search on three-session cases "
                        "(default set: updates_dev.jsonl) instead of the rules on pairs")
    parser.add_argument("--mentions", action="store_true",
                        help="the base rate: stable facts after 1, 5 and 20 everyday mentions "
                        "that change nothing, beside real changes (default set: "
                        "mentions.jsonl), through add_session and search")
    parser.add_argument("--data", default=None,
                        help="a JSON Lines set of labelled pairs, or of cases with "
                        "--through-search (default: the packaged set)")
    parser.add_argument("--cases", default=None, metavar="IDS",
                        help="with --through-search or --mentions: only these case ids "
                        "(comma-separated)")
    parser.add_argument("--sample", type=int, default=None, metavar="N",
                        help="with --through-search: about N of the cases, evenly spread and "
                        "stratified (changes and non-changes, English and not, in "
                        "proportion); the same N picks the same cases")
    parser.add_argument("--json", dest="json_out", default=None, help="write figures here")
    parser.add_argument("--markdown", default=None, metavar="PATH",
                        help="with --through-search: write the figures as a markdown section "
                        "into PATH (replacing the previous one)")
    parser.add_argument("--embedding-model", default=None, metavar="NAME_OR_PATH",
                        help="embedder for the similarity baseline and the stores searched "
                        "(default: packaged MiniLM)")
    add_llm_arguments(parser, max_tokens=256)
    parser.epilog = ("With --through-search and an LLM (--llm-url, --langchain or "
                     "--local-llm) each case's memory runs the LLM change judge "
                     "(stages.judge_changes=True) while extraction and reconciliation stay "
                     "LLM-free (segment, threshold): the only LLM calls are the judge's.")


def run(args: argparse.Namespace) -> int:
    if args.mentions:
        return run_mentions(args)
    if args.through_search:
        return run_through_search(args)
    if args.llm_url or args.langchain or args.local_llm:
        import sys

        from ..ops.commands import USAGE

        print("rmm bench supersede: an LLM judges changes only with --through-search",
              file=sys.stderr)
        return USAGE
    pairs = load_pairs(args.data or SET)
    figures = evaluate(pairs, default_embedder(args.embedding_model))
    print(report(figures))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=2))
    return 0


def run_through_search(args: argparse.Namespace) -> int:
    """Run the cases through a fresh store each, print (and write) the figures."""
    import sys

    from ..errors import MissingDependencyError
    from ..ops.commands import USAGE
    from .report import write_markdown
    from .supersede_search import evaluate as evaluate_cases
    from .supersede_search import load_cases, markdown, sample
    from .supersede_search import report as report_cases

    cases = load_cases(args.data)
    if args.cases:
        wanted = set(args.cases.split(","))
        cases = [c for c in cases if c.id in wanted]
    if args.sample:
        cases = sample(cases, args.sample)
    try:
        llm = llm_from_args(args)
    except (InvalidInputError, MissingDependencyError) as exc:
        print(f"rmm bench supersede: {exc}", file=sys.stderr)
        return USAGE
    figures = evaluate_cases(cases, default_embedder(args.embedding_model), llm=llm)
    print(report_cases(figures))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=2, ensure_ascii=False))
    if args.markdown:
        command = "rmm bench supersede " + " ".join(sys.argv[sys.argv.index("supersede") + 1:]
                                                    if "supersede" in sys.argv else [])
        write_markdown(args.markdown, "supersede-search", markdown(figures, command.strip()))
    return 0


def run_mentions(args: argparse.Namespace) -> int:
    """Run the base-rate facts (`mentions`), print (and write) the figures."""
    from .mentions import evaluate as evaluate_facts
    from .mentions import load_facts
    from .mentions import report as report_facts
    facts = load_facts(args.data)
    if args.cases:
        wanted = set(args.cases.split(","))
        facts = [f for f in facts if f.id in wanted]
    figures = evaluate_facts(facts, default_embedder(args.embedding_model))
    print(report_facts(figures))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=2, ensure_ascii=False))
    return 0


def load_pairs(path: Any) -> list[Pair]:
    """The labelled pairs of a JSON Lines file; a malformed line raises `InvalidInputError`
    naming its line number."""
    pairs = []
    for number, line in enumerate(Path(str(path)).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            label = row["label"]
            if label not in LABELS:
                raise InvalidInputError(f"label {label!r} is not one of {LABELS}")
            pairs.append(Pair(row["id"], row.get("family", ""), _memory(row, "old"),
                              _memory(row, "new"), label, bool(row.get("part", False))))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInputError(f"{path}:{number}: not a labelled pair: {exc}") from exc
    return pairs


def _memory(row: dict[str, Any], side: str) -> Memory:
    said = row[side]
    speakers = [said["speaker"]] if isinstance(said["speaker"], str) else list(said["speaker"])
    at = as_datetime(said["date"], f"{side} date")
    return Memory(id=f"{row['id']}-{side}", user_id="bench", text=said["text"],
                  key=said["text"], refs=[], speakers=speakers, occurred_at=at,
                  created_at=at, updated_at=at)


def predict(pairs: Sequence[Pair], off: Collection[str] = ()) -> list[tuple[str, bool]]:
    """What the rules say of each pair: the change's kind ("none" without one) and whether
    the old memory is changed only in part."""
    out = []
    for pair in pairs:
        changes = find_changes([pair.new], [pair.old], off=off)
        change = changes[0] if changes else None
        out.append((change.kind, change.part is not None) if change else ("none", False))
    return out


def scores(pairs: Sequence[Pair], predicted: Sequence[tuple[str, bool]]) -> dict[str, Any]:
    """Precision, recall and F1 for "supersedes" and "conflicts", and the confusion counts
    (gold label -> predicted label -> pairs)."""
    confusion = {g: dict.fromkeys(LABELS, 0) for g in LABELS}
    for pair, (kind, _) in zip(pairs, predicted):
        confusion[pair.label][kind] += 1
    out: dict[str, Any] = {}
    for kind in ("supersedes", "conflicts"):
        hit = confusion[kind][kind]
        out[kind] = prf(hit, sum(confusion[g][kind] for g in LABELS), sum(confusion[kind].values()))
    out["confusion"] = confusion
    return out


def prf(hit: int, said: int, gold: int) -> dict[str, float]:
    """Precision, recall and F1 from true positives, predicted and gold positives (0 when
    undefined)."""
    p = hit / said if said else 0.0
    r = hit / gold if gold else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def part_scores(pairs: Sequence[Pair], predicted: Sequence[tuple[str, bool]]) -> dict[str, float]:
    """Of the supersedes pairs the rules find (`found`, `labelled` of them in part), how
    well "in part" matches the labels."""
    found = [(pair.part, part) for pair, (kind, part) in zip(pairs, predicted)
             if pair.label == kind == "supersedes"]
    return {**prf(sum(g and p for g, p in found), sum(p for _, p in found),
                  sum(g for g, _ in found)),
            "found": len(found), "labelled": sum(g for g, _ in found)}


def auroc(positive: np.ndarray, negative: np.ndarray) -> float:
    """The probability that a positive scores above a negative (ties count half), by the
    rank-sum formula."""
    both = np.concatenate([positive, negative])
    order = both.argsort(kind="mergesort")
    ranks = np.empty(len(both))
    ranks[order] = np.arange(1, len(both) + 1)
    _, tie, counts = np.unique(both, return_inverse=True, return_counts=True)
    sums = np.bincount(tie, weights=ranks)
    ranks = (sums / counts)[tie]
    n, m = len(positive), len(negative)
    return float((ranks[:n].sum() - n * (n + 1) / 2) / (n * m))


def best_threshold(values: np.ndarray, gold: np.ndarray) -> tuple[float, dict[str, float]]:
    """The threshold on `values` (predict positive at or above it) with the best F1, and
    its scores."""
    best: tuple[float, dict[str, float]] = (float("inf"), prf(0, 0, int(gold.sum())))
    for threshold in np.unique(values):
        said = values >= threshold
        figures = prf(int((said & gold).sum()), int(said.sum()), int(gold.sum()))
        if figures["f1"] > best[1]["f1"]:
            best = (float(threshold), figures)
    return best


def similarity(pairs: Sequence[Pair], embedder: Embedder) -> dict[str, Any]:
    """Cosine between old and new text as the only evidence, for supersedes against none."""
    kept = [p for p in pairs if p.label in ("supersedes", "none")]
    old = embedder.embed([p.old.text for p in kept])
    new = embedder.embed([p.new.text for p in kept])
    cosine = (old * new).sum(axis=1) / (np.linalg.norm(old, axis=1) * np.linalg.norm(new, axis=1))
    gold = np.array([p.label == "supersedes" for p in kept])
    threshold, figures = best_threshold(cosine, gold)
    return {"embedder": getattr(embedder, "name", type(embedder).__name__),
            "auroc": auroc(cosine[gold], cosine[~gold]), "threshold": threshold,
            "best_threshold": figures}


def evaluate(pairs: Sequence[Pair], embedder: Embedder) -> dict[str, Any]:
    """Every figure of the bench, as written by `--json`."""
    predicted = predict(pairs)
    return {"pairs": len(pairs),
            "labels": {g: sum(p.label == g for p in pairs) for g in LABELS},
            **scores(pairs, predicted),
            "part": part_scores(pairs, predicted),
            "ablation": {signal: {k: v for k, v in scores(pairs, predict(pairs, (signal,))).items()
                                  if k != "confusion"} for signal in SIGNALS},
            "similarity": similarity(pairs, embedder)}


def report(figures: dict[str, Any]) -> str:
    """The figures as the bench prints them."""
    labels = figures["labels"]
    lines = [f"{figures['pairs']} pairs: " + ", ".join(f"{n} {g}" for g, n in labels.items()),
             "", f"{'rules':<22}{'P':>7}{'R':>7}{'F1':>7}{'P':>9}{'R':>7}{'F1':>7}",
             f"{'':<22}{'supersedes':>21}{'conflicts':>23}"]
    rows = {"all signals": figures, **{f"without {s}": r for s, r in figures["ablation"].items()}}
    for name, row in rows.items():
        s, c = row["supersedes"], row["conflicts"]
        lines.append(f"{name:<22}{s['precision']:>7.2f}{s['recall']:>7.2f}{s['f1']:>7.2f}"
                     f"{c['precision']:>9.2f}{c['recall']:>7.2f}{c['f1']:>7.2f}")
    lines += ["", "confusion (gold \\ predicted)" + "".join(f"{g:>12}" for g in LABELS)]
    for gold, row in figures["confusion"].items():
        lines.append(f"{gold:<28}" + "".join(f"{row[g]:>12}" for g in LABELS))
    part, sim = figures["part"], figures["similarity"]
    lines += ["", f"in part, of the {part['found']} supersessions found ({part['labelled']} "
              f"labelled in part): P {part['precision']:.2f} "
              f"R {part['recall']:.2f} F1 {part['f1']:.2f}",
              f"similarity alone ({sim['embedder']} cosine), supersedes vs none: AUROC "
              f"{sim['auroc']:.3f}; best threshold {sim['threshold']:.3f} gives P "
              f"{sim['best_threshold']['precision']:.2f} R {sim['best_threshold']['recall']:.2f} "
              f"F1 {sim['best_threshold']['f1']:.2f} (tuned on this set)"]
    return "\n".join(lines)
