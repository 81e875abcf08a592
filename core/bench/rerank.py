"""`rmm bench rerank`: train the REINFORCE reranker on LoCoMo with oracle citations.

Oracle attribution stands in for an LLM: a hit is cited when its refs hold a gold evidence
turn. One run ingests the train and test conversations, measures R_any@5 and Rtok@1000 on
the test ones with exploration off, makes one pass of `search(explore=True)` + `feedback`
over the train questions, measures again, and prints the cited share per 50 steps (plus a
PNG of that curve) and the cost of a feedback step and of reranking 20 candidates.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..embed import default_embedder
from ..errors import MissingDependencyError
from ..memory import ReflectiveMemory
from ..rerank import Ranking, Reranker, Weights
from .locomo import Conversation, load_locomo
from .metrics import r_any, r_tok

if TYPE_CHECKING:
    from matplotlib.axes import Axes

RTOK_DEPTH = 100
"""Hits ranked for Rtok@1000: enough to fill the budget."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="path of locomo10_dev.json")
    parser.add_argument("--train", default="conv-26,conv-30,conv-41", help="sample ids")
    parser.add_argument("--test", default="conv-42,conv-43", help="held-out sample ids")
    parser.add_argument("--plot", default="rerank_curve.png", help="learning-curve PNG ('' off)")
    parser.add_argument("--window", type=int, default=50, help="steps per point of the curve")
    parser.add_argument("--seed", type=int, default=0, help="seed of exploration")
    parser.add_argument("--json", dest="json_out", default=None, help="write figures here")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="MemoryConfig override, e.g. reranker_mix=5 (repeatable)")
    parser.add_argument("--bound-epochs", type=int, default=0,
                        help="also fit the same maps with full supervision for this many "
                             "epochs (Adam, listwise) and report held-out R_any@5: how far "
                             "this reranker can go on these conversations at all (0 = off; "
                             "needs torch)")
    parser.add_argument("--bound-lr", type=float, default=1e-4, help="Adam step of the bound")



class CachedEmbedder:
    """Embeds every question once, in one batch, instead of once per search."""

    def __init__(self, base) -> None:
        self.base, self.dim, self._memo = base, base.dim, {}

    def embed(self, texts):
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            self._memo.update(zip(missing, self.base.embed(missing)))
        return np.stack([self._memo[t] for t in texts]) if texts else self.base.embed([])


def run(args: argparse.Namespace) -> int:
    from .retrieval import parse_setting

    train_ids, test_ids = args.train.split(","), args.test.split(",")
    convs = {c.sample_id: c for c in load_locomo(args.data)}
    unknown = sorted(set(train_ids + test_ids) - set(convs))
    if unknown:
        raise SystemExit(f"unknown conversations {unknown}; the file has {sorted(convs)}")
    embedder = CachedEmbedder(default_embedder())
    embedder.embed([q.question for c in convs.values() for q in c.questions])
    settings = dict(parse_setting(s) for s in args.set)
    with tempfile.TemporaryDirectory() as tmp:
        mem = ReflectiveMemory.open(str(Path(tmp) / "rerank.sqlite"), embedder=embedder,
                                    progress=False, **{"reranker_seed": args.seed, **settings})
        for sample_id in train_ids + test_ids:
            conv = convs[sample_id]
            mem.add_sessions([{"turns": s.turns, "session_id": s.session_id,
                               "started_at": s.started_at} for s in conv.sessions],
                             user_id=sample_id)
        before = evaluate(mem, [convs[i] for i in test_ids])
        shares, feedback_ms = train(mem, [convs[i] for i in train_ids])
        after = evaluate(mem, [convs[i] for i in test_ids])
        rerank_ms = time_rerank(mem, convs[test_ids[0]])
        bound = supervised_bound(mem, [convs[i] for i in train_ids],
                                 [convs[i] for i in test_ids], epochs=args.bound_epochs,
                                 lr=args.bound_lr) if args.bound_epochs > 0 else None
        steps = mem._reranker.weights.current("reranker/global", embedder.dim).steps
        mem.close()
    curve = share_curve(shares, args.window)
    figures = {"before": before, "after": after, "train_steps": len(shares),
               "stored_steps": steps, "cited_share_per_window": curve,
               "feedback_ms_median": float(np.median(feedback_ms)),
               "feedback_ms_p95": float(np.percentile(feedback_ms, 95)),
               "rerank20_ms_median": float(np.median(rerank_ms)),
               "rerank20_ms_p95": float(np.percentile(rerank_ms, 95)),
               "settings": settings, "supervised_bound": bound}
    print(report(figures, test_ids, args.window))
    if args.plot:
        plot_curve(curve, args.window, args.plot)
        print(f"learning curve: {args.plot}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=2))
    return 0




def evaluate(mem: ReflectiveMemory, convs: list[Conversation]) -> dict[str, float]:
    """R_any@5 and Rtok@1000 (percent) through `search` with exploration off."""
    hits5, tok = [], []
    for conv in convs:
        for q in conv.questions:
            top = mem.search(q.question, user_id=conv.sample_id, k=5)
            hits5.append(r_any([(h.text, h.refs) for h in top], q.evidence, 5))
            deep = mem.search(q.question, user_id=conv.sample_id, k=RTOK_DEPTH)
            tok.append(r_tok([(h.text, h.refs) for h in deep], q.evidence, 1000))
    return {"R_any@5": 100 * float(np.mean(hits5)), "Rtok@1000": 100 * float(np.mean(tok)),
            "questions": len(hits5)}


def train(mem: ReflectiveMemory, convs: list[Conversation]) -> tuple[list[float], list[float]]:
    """One pass of explore-search + oracle feedback; cited share and ms of each step."""
    shares, ms = [], []
    for conv in convs:
        for q in conv.questions:
            result = mem.search(q.question, user_id=conv.sample_id, k=5, explore=True)
            cited = [h.memory.id for h in result if set(h.refs) & q.evidence]
            shares.append(len(cited) / max(len(result), 1))
            start = time.perf_counter()
            mem.feedback(result, cited)
            ms.append(1000 * (time.perf_counter() - start))
    return shares, ms


def supervised_bound(mem: ReflectiveMemory, train: list[Conversation],
                     test: list[Conversation], *, epochs: int, lr: float) -> dict[str, float]:
    """Fit W_q, W_m as well as labels allow: softmax over each train question's K candidates
    towards the cited ones, full batch, Adam (torch's autograd). R_any@5 of the candidates
    re-ordered by the fit (exploration off), before and after, on train and held-out
    questions."""
    try:
        import torch
    except ImportError as exc:
        raise MissingDependencyError("torch", "torch") from exc
    reranker = mem._reranker.reranker
    train_set, test_set = _labelled(mem, train), _labelled(mem, test)
    dim = mem.embedder.dim
    w_q, w_m = torch.zeros(dim, dim, requires_grad=True), torch.zeros(dim, dim, requires_grad=True)
    optimiser = torch.optim.Adam([w_q, w_m], lr=lr)
    slope = reranker.combine.slope(reranker.mix)
    examples = []
    for ranking, cited in train_set:
        if cited.any():
            rows, mask = torch.from_numpy(ranking.rows), torch.from_numpy(ranking.mask)
            query = torch.from_numpy(ranking.query)
            r0 = (rows @ query).masked_fill(~mask, -torch.inf).amax(1)
            # the combined score is affine in r: its part without r, then slope * r
            base = reranker.combine.score(ranking.fused, np.zeros_like(ranking.fused),
                                          r0.numpy(), reranker.mix)
            examples.append((query, rows, mask, torch.from_numpy(base), torch.from_numpy(cited)))
    for _ in range(epochs):
        loss = torch.zeros(())
        for query, rows, mask, base, cited in examples:
            r = ((rows + rows @ w_m.T) @ (query + w_q @ query)).masked_fill(~mask, -torch.inf)
            logits = (base + slope * r.amax(1)) / reranker.temperature
            loss = loss - (torch.log_softmax(logits, 0)[cited]).mean()
        optimiser.zero_grad()
        (loss / len(train_set)).backward()
        optimiser.step()
    fitted = Weights(w_q.detach().numpy(), w_m.detach().numpy())
    zeros = Weights.zeros(dim)
    return {"epochs": epochs, "lr": lr,
            "train_before": _r_any5(reranker, zeros, train_set),
            "train_after": _r_any5(reranker, fitted, train_set),
            "test_before": _r_any5(reranker, zeros, test_set),
            "test_after": _r_any5(reranker, fitted, test_set)}


def _labelled(mem: ReflectiveMemory,
              convs: list[Conversation]) -> list[tuple[Ranking, np.ndarray]]:
    """Each question's ranking inputs and which of its K candidates hold gold evidence."""
    out = []
    for conv in convs:
        for q in conv.questions:
            result = mem.search(q.question, user_id=conv.sample_id, k=5)
            ranking = result.state.get("ranking")
            if ranking is not None:
                out.append((ranking, np.array([bool(set(h.refs) & q.evidence)
                                               for h in result.candidates])))
    return out


def _r_any5(reranker: Reranker, weights: Weights,
            examples: list[tuple[Ranking, np.ndarray]]) -> float:
    found = [bool(cited[np.argsort(-reranker.scores(weights, r.query, r.rows, r.mask, r.fused),
                                   kind="stable")[:5]].any()) for r, cited in examples]
    return 100 * float(np.mean(found))


def share_curve(shares: list[float], window: int) -> list[float]:
    """The learning curve: mean cited share of each `window` consecutive feedback steps."""
    return [float(np.mean(shares[i:i + window])) for i in range(0, len(shares), window)]


def time_rerank(mem: ReflectiveMemory, conv: Conversation, repeats: int = 200) -> list[float]:
    """ms to rerank 20 candidates (vectors already fetched: the reranker's own cost)."""
    query = conv.questions[0].question
    result = mem.search(query, user_id=conv.sample_id, k=5)
    candidates = result.candidates[:20]
    vectors = mem.store.memory_vectors(conv.sample_id, [h.memory.id for h in candidates])
    rows = [vectors[h.memory.id] for h in candidates]
    fused = [h.score for h in candidates]
    weights = mem._reranker.weights.current("reranker/global", mem.embedder.dim)
    weights = Weights(weights.w_q.copy(), weights.w_m.copy(), weights.steps)
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        mem._reranker.reranker.rank(weights, result.state["query_vec"], rows, fused, 5,
                                    explore=True)
        out.append(1000 * (time.perf_counter() - start))
    return out


def report(figures: dict, test_ids: list[str], window: int) -> str:
    b, a = figures["before"], figures["after"]
    settings = ", ".join(f"{k}={v}" for k, v in figures["settings"].items()) or "defaults"
    lines = [
        f"settings: {settings}",
        f"held-out {','.join(test_ids)} ({b['questions']} questions), exploration off:",
        f"  R_any@5    before {b['R_any@5']:5.1f}  after {a['R_any@5']:5.1f}  "
        f"({a['R_any@5'] - b['R_any@5']:+.1f})",
        f"  Rtok@1000  before {b['Rtok@1000']:5.1f}  after {a['Rtok@1000']:5.1f}  "
        f"({a['Rtok@1000'] - b['Rtok@1000']:+.1f})",
        f"training: {figures['train_steps']} feedback steps (stored steps "
        f"{figures['stored_steps']}); cited share per {window} steps:",
        "  " + " ".join(f"{s:.2f}" for s in figures["cited_share_per_window"]),
        f"feedback step: median {figures['feedback_ms_median']:.2f} ms, "
        f"p95 {figures['feedback_ms_p95']:.2f} ms (gradient + logged step)",
        f"rerank 20 candidates: median {figures['rerank20_ms_median']:.3f} ms, "
        f"p95 {figures['rerank20_ms_p95']:.3f} ms",
    ]
    bound = figures.get("supervised_bound")
    if bound:
        lines.append(
            f"supervised bound ({bound['epochs']} epochs, Adam {bound['lr']:g}), R_any@5: "
            f"train {bound['train_before']:.1f} -> {bound['train_after']:.1f}, held-out "
            f"{bound['test_before']:.1f} -> {bound['test_after']:.1f}")
    return "\n".join(lines)


def plot_curve(curve: list[float], window: int, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", "bench") from exc
    fig, ax = plt.subplots(figsize=(6, 3.5))
    draw_curve(ax, curve, window)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def draw_curve(ax: Axes, curve: list[float], window: int) -> None:
    """The learning curve on a matplotlib `ax` (the PNG above, or a notebook's inline plot)."""
    ax.plot([window * (i + 1) for i in range(len(curve))], curve, marker="o")
    ax.set_xlabel("feedback steps")
    ax.set_ylabel(f"share of kept memories cited (per {window} steps)")
    ax.set_title("REINFORCE reranker, oracle citations")
    ax.grid(alpha=0.3)
