"""`rmm bench rerank`: what the learned reranker adds, with oracle citations, on every dataset.

Oracle attribution stands in for an LLM: a hit is cited when its refs hold a gold evidence
turn. One run ingests the train and held-out conversations of every dataset given (each
conversation one user, one store), then measures R_any@5 and Rtok@1000 (strict) per family:
- transfer: `reranker.kind="none"` on the held-out questions, then the reranker trained from zero
  on the train questions (`--epochs` passes of `search(explore=True)` + `feedback`, all
  families in one shuffled stream), exploration off at scoring;
- shipped: the packaged pre-trained weights, untouched, against `none` on the held-out ones;
- online: one deployment per family (from the shipped weights, or zero: `--online-from`)
  answering its held-out questions in order (explored search, feedback after each), each
  question first scored with exploration off, against `none` on the same questions; figures
  over the second half.
It prints a table per family, the cost of a feedback step and of reranking 20 candidates,
draws the learning curves (PNG) and can save the trained weights (`--save-weights`: how the
shipped file is made).
"""

from __future__ import annotations

import argparse
import json
import pickle
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..config import MemoryConfig, SearchConfig
from ..errors import InvalidInputError
from ..learn.rerank_features import save_weights
from ..memory import ReflectiveMemory
from ..models.embed import default_embedder, query_vectors
from ..ops.commands import BAD_DATA
from ..types import MemoryHit
from .datasets import LOADERS, load
from .metrics import r_any, r_tok
from .records import Conversation, Question, ingest
from .rerank_ceiling import CEILING_K, ceiling, supervised_bound
from .rerank_report import draw_curve as draw_curve
from .rerank_report import plot_curves, report

RTOK_DEPTH = 100
"""Hits ranked for Rtok@1000: enough to fill the budget."""

SPLITS = {"locomo": ("0-2", "3-4"), "beam": ("0-5", "6-9"), "jsonl": ("0", "1")}
"""Default train and held-out positions per dataset (BEAM in numeric order: 0 is 1)."""

METRICS = ("R_any@5", "Rtok@1000")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", action="append", required=True, metavar="NAME=PATH",
                        help=f"a dataset to run on (repeatable), NAME one of {sorted(LOADERS)}: "
                             "e.g. --dataset locomo=locomo10_dev.json --dataset beam=100K")
    parser.add_argument("--train", action="append", default=[], metavar="NAME=POSITIONS",
                        help="train conversations of a dataset, e.g. locomo=0-2 (defaults: "
                             + ", ".join(f"{k}={v[0]}" for k, v in SPLITS.items()) + ")")
    parser.add_argument("--test", action="append", default=[], metavar="NAME=POSITIONS",
                        help="held-out conversations, e.g. beam=6-9 (defaults: "
                             + ", ".join(f"{k}={v[1]}" for k, v in SPLITS.items()) + ")")
    parser.add_argument("--epochs", type=int, default=1, help="passes over the train questions")
    parser.add_argument("--phases", default="transfer,shipped,online",
                        help="which of transfer, shipped, online to run")
    parser.add_argument("--online-from", choices=("zero", "shipped"), default="shipped",
                        help="the online deployments' starting weights (reranker.kind=features; "
                             "shipped, as a default install)")
    parser.add_argument("--plot", default="rerank_curve.png", help="learning-curve PNG ('' off)")
    parser.add_argument("--window", type=int, default=50, help="steps per point of the curve")
    parser.add_argument("--seed", type=int, default=0, help="seed of exploration and shuffling")
    parser.add_argument("--json", dest="json_out", default=None, help="write figures here")
    parser.add_argument("--save-weights", default=None, metavar="PATH",
                        help="write the weights trained by the transfer phase here (the "
                             "format of the shipped file; reranker.kind='features')")
    parser.add_argument("--embed-cache", default=None, metavar="PATH",
                        help="a pickle of text -> vector: read if it exists, written after")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="MemoryConfig override of the learning runs, e.g. reranker.kind=rmm")
    parser.add_argument("--bound-epochs", type=int, default=0,
                        help="reranker.kind=rmm: also fit the bilinear maps with full supervision "
                             "for this many epochs (Adam, listwise) and report held-out R_any@5 "
                             "(0 = off; needs torch)")
    parser.add_argument("--bound-lr", type=float, default=1e-4, help="Adam step of the bound")
    parser.add_argument("--ceiling", nargs="?", const=",".join(map(str, CEILING_K)),
                        default=None, metavar="K,K",
                        help="also print the headroom on the held-out questions for each pool "
                             "of K candidates: evidence in the pool, and the feature reranker's "
                             "form fitted with full supervision on the train questions and on "
                             "the held-out ones themselves "
                             f"(default K: {','.join(map(str, CEILING_K))}; --phases '' runs it "
                             "alone)")


class CachedEmbedder:
    """Embeds every text once (questions are searched many times), optionally from a file."""

    def __init__(self, base, memo: dict | None = None) -> None:
        self.base, self.dim, self._memo = base, base.dim, memo if memo is not None else {}

    def embed(self, texts):
        return self._cached(texts, self.base.embed, "")

    def embed_queries(self, texts):
        return self._cached(texts, lambda t: query_vectors(self.base, t), "query: ")

    def _cached(self, texts, encode, side):
        """Each text's vector from the memo, keyed by its side (a query's vector differs
        from the same text stored, for a model with a query prefix)."""
        missing = [t for t in dict.fromkeys(texts) if side + t not in self._memo]
        if missing:
            self._memo.update(zip([side + t for t in missing], encode(missing)))
        return np.stack([self._memo[side + t] for t in texts]) if texts else self.base.embed([])


def _pairs(specs: Iterable[str], what: str) -> dict[str, str]:
    out = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or name not in LOADERS:
            raise InvalidInputError(f"{what} {spec!r}: expected NAME=VALUE with NAME one of "
                                    f"{sorted(LOADERS)}")
        out[name] = value
    return out


def _sizes(spec: str) -> list[int]:
    """`--ceiling`'s pool sizes, each a valid `search.candidates` of 5 or more."""
    try:
        sizes = [SearchConfig(candidates=int(k)).candidates for k in spec.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 5:
        raise InvalidInputError(f"--ceiling {spec!r}: expected pool sizes from 5 to "
                                "`search.candidates`' limit, e.g. 20,50")
    return sizes


def load_families(args: argparse.Namespace
                  ) -> dict[str, tuple[list[Conversation], list[Conversation]]]:
    """Each dataset's (train, held-out) conversations, as `--dataset/--train/--test` say."""
    from .retrieval import parse_range

    paths = _pairs(args.dataset, "--dataset")
    trains, tests = _pairs(args.train, "--train"), _pairs(args.test, "--test")
    families = {}
    for name, path in paths.items():
        train_at = parse_range(trains.get(name, SPLITS[name][0]))
        test_at = parse_range(tests.get(name, SPLITS[name][1]))
        convs = load(name, path, train_at + test_at)
        families[name] = (convs[:len(train_at)], convs[len(train_at):])
    return families


def run(args: argparse.Namespace) -> int:
    from .retrieval import parse_setting

    try:
        families = load_families(args)
        if args.ceiling is not None:
            _sizes(args.ceiling)
    except (InvalidInputError, FileNotFoundError, ValueError) as exc:
        print(f"rmm bench rerank: {exc}", file=sys.stderr)
        return BAD_DATA
    settings = dict(parse_setting(s) for s in args.set)
    phases = set(args.phases.split(","))
    cache = Path(args.embed_cache) if args.embed_cache else None
    memo = pickle.loads(cache.read_bytes()) if cache and cache.exists() else {}
    embedder = CachedEmbedder(default_embedder(MemoryConfig(**settings).embedding.model), memo)
    figures: dict[str, Any] = {"settings": settings, "epochs": args.epochs, "families": {}}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "ingested.sqlite"
        with ReflectiveMemory.open(str(base), embedder=embedder, progress=False) as mem:
            for train_convs, test_convs in families.values():
                for conv in train_convs + test_convs:
                    ingest(mem, conv)
        if cache:
            cache.write_bytes(pickle.dumps(embedder._memo))

        def deployment(tag: str, **config: Any) -> ReflectiveMemory:
            path = Path(tmp) / f"{tag}.sqlite"
            shutil.copy(base, path)
            return ReflectiveMemory.open(str(path), embedder=embedder, progress=False,
                                         **{"reranker.seed": args.seed, **config})

        held_out = {name: test for name, (_, test) in families.items()}
        with deployment("none", **{"reranker.kind": "none"}) as mem:
            none = {name: evaluate(mem, convs, per_question=True)
                    for name, convs in held_out.items()}
        for name in families:
            figures["families"][name] = {"held-out questions": len(none[name]["R_any@5"]),
                                         "none": _mean(none[name])}
        if args.ceiling is not None:
            for k in _sizes(args.ceiling):
                with deployment(f"ceiling-{k}", **{"reranker.kind": "features",
                                                   "reranker.weights": "shipped",
                                                   "search.candidates": k}) as mem:
                    for name, rows in ceiling(mem, families).items():
                        figures["families"][name].setdefault("ceiling", {})[k] = rows
        if "transfer" in phases:
            figures["transfer"] = transfer(deployment, families, settings, args)
        if "shipped" in phases and MemoryConfig(**settings).reranker.kind == "features":
            with deployment("shipped", **{**settings, "reranker.weights": "shipped"}) as mem:
                for name, convs in held_out.items():
                    figures["families"][name]["shipped"] = evaluate(mem, convs)
        if "online" in phases:
            for name, convs in held_out.items():
                start = None if args.online_from == "zero" else "shipped"
                with deployment(f"online-{name}", **{"reranker.weights": start, **settings}) \
                        as mem:
                    figures["families"][name]["online"] = online(mem, convs, none[name])
    publish(figures, args)
    return 0


def publish(figures: dict, args: argparse.Namespace) -> None:
    """Print the report; draw the curves and write the figures' JSON where asked."""
    for name, family in figures["families"].items():
        if "transfer" in figures:
            family["transfer"] = figures["transfer"]["after"][name]
    figures["online_from"] = args.online_from
    print(report(figures))
    if args.plot:
        plot_curves(figures, args.window, args.plot)
        print(f"learning curves: {args.plot}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=2))


def transfer(deployment, families: dict, settings: dict, args: argparse.Namespace) -> dict:
    """Train from zero on every family's train questions, score the held-out ones."""
    with deployment("transfer", **{"reranker.weights": None, **settings}) as mem:
        stream = [(conv.sample_id, q) for train, _ in families.values()
                  for conv in train for q in conv.questions]
        rng = np.random.default_rng(args.seed)
        shares, feedback_ms = [], []
        for _ in range(args.epochs):
            for i in rng.permutation(len(stream)):
                share, ms = feedback_step(mem, *stream[i])
                shares.append(share)
                feedback_ms.append(ms)
        after = {name: evaluate(mem, test) for name, (_, test) in families.items()}
        first_test = next(t for _, test in families.values() for t in test)
        rerank_ms = time_rerank(mem, first_test)
        kind = mem.config.reranker.kind
        out: dict[str, Any] = {
            "after": after, "train_steps": len(shares),
            "cited_share_per_window": share_curve(shares, args.window),
            "feedback_ms_median": float(np.median(feedback_ms)),
            "feedback_ms_p95": float(np.percentile(feedback_ms, 95)),
            "rerank20_ms_median": float(np.median(rerank_ms)),
            "rerank20_ms_p95": float(np.percentile(rerank_ms, 95))}
        if kind != "none":
            weights = mem.reranker.weights_for("", mem.embedder.dim)
            out["stored_steps"] = weights.steps
            if kind == "features":
                out["weights"] = weights.named()
                if args.save_weights:
                    trained_on = {name: [c.sample_id for c in train]
                                  for name, (train, _) in families.items()}
                    save_weights(weights, args.save_weights, {
                        "about": "reranker.kind='features' weights trained by REINFORCE from "
                                 "oracle citations (a hit is cited when its refs hold a "
                                 "gold evidence turn), starting from zero",
                        "trained_on": trained_on, "epochs": args.epochs, "seed": args.seed,
                        "settings": settings,
                        "command": "rmm bench rerank " + " ".join(
                            f"--dataset {n}={Path(p).name}" for n, p in
                            _pairs(args.dataset, "--dataset").items())
                        + f" --epochs {args.epochs} --seed {args.seed} --save-weights PATH"})
        if args.bound_epochs > 0 and kind == "rmm":
            train = [c for tr, _ in families.values() for c in tr]
            test = [c for _, te in families.values() for c in te]
            out["supervised_bound"] = supervised_bound(mem, train, test, epochs=args.bound_epochs,
                                                       lr=args.bound_lr)
        return out


def feedback_step(mem: ReflectiveMemory, user_id: str, q: Question) -> tuple[float, float]:
    """An explored search and its oracle feedback: the cited share and the step's ms."""
    result = mem.search(q.question, user_id=user_id, k=5, explore=True)
    cited = [h.memory.id for h in result if set(h.refs) & q.evidence]
    if not result.hits:
        return 0.0, 0.0
    start = time.perf_counter()
    mem.feedback(result, cited)
    return len(cited) / len(result.hits), 1000 * (time.perf_counter() - start)


def evaluate(mem: ReflectiveMemory, convs: list[Conversation], *,
             per_question: bool = False) -> dict[str, Any]:
    """R_any@5 and Rtok@1000 (percent) through `search` with exploration off: the means, or
    with `per_question` each question's figures."""
    scores: dict[str, list[float]] = {m: [] for m in METRICS}
    for conv in convs:
        for q in conv.questions:
            for metric, value in score(mem, conv.sample_id, q).items():
                scores[metric].append(value)
    return scores if per_question else {**_mean(scores), "questions": len(scores["R_any@5"])}


def score(mem: ReflectiveMemory, user_id: str, q: Question) -> dict[str, float]:
    top = mem.search(q.question, user_id=user_id, k=5)
    deep = mem.search(q.question, user_id=user_id, k=RTOK_DEPTH)
    return {"R_any@5": float(r_any([(h.text, h.refs) for h in top], q.evidence, 5)),
            "Rtok@1000": float(r_tok([(h.text, h.refs) for h in deep], q.evidence, 1000))}


def _mean(scores: dict[str, list[float]]) -> dict[str, float]:
    return {m: 100 * float(np.mean(v)) if v else float("nan") for m, v in scores.items()}


def online(mem: ReflectiveMemory, convs: list[Conversation],
           none: dict[str, list[float]]) -> dict[str, Any]:
    """Each question in order: scored with exploration off, then answered (explored search)
    and learnt from; second-half means against `none`'s figures on the same questions."""
    scores: dict[str, list[float]] = {m: [] for m in METRICS}
    for conv in convs:
        for q in conv.questions:
            for metric, value in score(mem, conv.sample_id, q).items():
                scores[metric].append(value)
            feedback_step(mem, conv.sample_id, q)
    half = len(scores["R_any@5"]) // 2
    return {"second half": _mean({m: v[half:] for m, v in scores.items()}),
            "none second half": _mean({m: v[half:] for m, v in none.items()}),
            "questions": len(scores["R_any@5"]) - half,
            "curve": scores["R_any@5"], "none curve": none["R_any@5"]}


def train(mem: ReflectiveMemory, convs: list[Conversation]) -> tuple[list[float], list[float]]:
    """One pass of explore-search + oracle feedback; cited share and ms of each step."""
    steps = [feedback_step(mem, conv.sample_id, q) for conv in convs for q in conv.questions]
    return [s for s, _ in steps], [ms for _, ms in steps]


def share_curve(shares: list[float], window: int) -> list[float]:
    """The learning curve: mean cited share of each `window` consecutive feedback steps."""
    return [float(np.mean(shares[i:i + window])) for i in range(0, len(shares), window)]


def time_rerank(mem: ReflectiveMemory, conv: Conversation, repeats: int = 200) -> list[float]:
    """ms to rerank 20 candidates, their features included (vectors already fetched: the
    reranker's own cost)."""
    query = conv.questions[0].question
    result = mem.search(query, user_id=conv.sample_id, k=5)
    candidates = [MemoryHit(h.memory, h.retrieval, h.text, h.rank)  # fused, as search ranks
                  for h in result.candidates[:20]]
    vectors = mem.store.memory_vectors(conv.sample_id, [h.memory.id for h in candidates])
    rows = [vectors[h.memory.id] for h in candidates]
    reranker = mem.reranker
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        reranker.rerank(conv.sample_id, result.state["query_vec"], candidates, rows, 5,
                        explore=True, query=query)
        out.append(1000 * (time.perf_counter() - start))
    return out
