"""How far a reranker can go on a split: the paper's bilinear maps fitted with full supervision
(`rmm bench rerank --set reranker.kind=rmm --bound-epochs N`), and the headroom of the feature
reranker's form on the held-out questions themselves (`--ceiling`)."""

from __future__ import annotations

import numpy as np

from ..errors import MissingDependencyError
from ..learn.rerank import Ranking, Reranker, Weights
from ..learn.rerank_policy import zscore
from ..memory import ReflectiveMemory
from .metrics import r_any, r_tok
from .records import Conversation

CEILING_K = (20, 50, 100)
"""Candidate pools of `--ceiling`: the default K, a larger one, and the pool that the bench's
Rtok@1000 (100 hits) ranks."""

L2 = (1e-4, 1e-2)
"""Ridge strengths of the supervised fits: the fit on these questions keeps the best, the fit on
the train questions takes the last."""


def supervised_bound(mem: ReflectiveMemory, train: list[Conversation],
                     test: list[Conversation], *, epochs: int, lr: float) -> dict[str, float]:
    """Fit W_q, W_m as well as labels allow: softmax over each train question's K candidates
    towards the cited ones, full batch, Adam (torch's autograd). R_any@5 of the candidates
    re-ordered by the fit (exploration off), before and after, on train and held-out
    questions (`reranker.kind="rmm"`)."""
    try:
        import torch
    except ImportError as exc:
        raise MissingDependencyError("torch", "torch") from exc
    reranker = mem.reranker.scorer.reranker
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


Example = tuple[np.ndarray, np.ndarray, list, frozenset]
"""One question's pool: X (K, 1+F) = [z(fused), phi], which candidates hold evidence (K,),
their (text, refs), the gold turns."""


def ceiling(mem: ReflectiveMemory, families: dict[str, tuple[list[Conversation],
                                                              list[Conversation]]]
            ) -> dict[str, dict[str, dict[str, float]]]:
    """Per family, R_any@5 and Rtok@1000 of its held-out questions within the pool `mem`
    searches (`search.candidates` = K; `reranker.kind="features"`): the hand-set order, the shipped
    weights, the feature reranker's form fitted with full supervision on every family's train
    questions, the best such fit on these held-out questions themselves (hand-set and shipped
    weights among the tries), and the pool itself (evidence first)."""
    start = np.concatenate([[1.0], mem.reranker.weights_for("", mem.embedder.dim).w])
    on_train = _fit(_pools(mem, [c for train, _ in families.values() for c in train]),
                    start, L2[-1])
    out = {}
    for name, (_, test) in families.items():
        examples = _pools(mem, test)
        if not examples:
            continue
        fits = [np.eye(len(start))[0], start, *(_fit(examples, start, l2) for l2 in L2)]
        out[name] = {
            "none": _figures(examples, [x[:, 0] for x, *_ in examples]),
            "shipped": _figures(examples, [x @ start for x, *_ in examples]),
            "fit on train": _figures(examples, [x @ on_train for x, *_ in examples]),
            "fit on these": max((_figures(examples, [x @ w for x, *_ in examples])
                                 for w in fits), key=lambda f: (f["R_any@5"], f["Rtok@1000"])),
            "pool": _figures(examples, [_oracle(held, units, gold)
                                        for _, held, units, gold in examples])}
    return out


def _pools(mem: ReflectiveMemory, convs: list[Conversation]) -> list[Example]:
    out = []
    for conv in convs:
        for q in conv.questions:
            result = mem.search(q.question, user_id=conv.sample_id, k=5)
            ranking = result.state.get("ranking")
            if ranking is None or ranking.features is None:
                continue
            x = np.concatenate([zscore(ranking.fused)[:, None], ranking.features], axis=1)
            held = np.array([bool(set(h.refs) & q.evidence) for h in result.candidates])
            out.append((x.astype(np.float64), held, [(h.text, h.refs) for h in result.candidates],
                        frozenset(q.evidence)))
    return out


def _oracle(held: np.ndarray, units: list, gold: frozenset) -> np.ndarray:
    """Scores putting the evidence first, most gold turns per word first (a greedy best order
    for the word budget), then the rest in retrieval order."""
    gain = np.array([len(gold & set(refs)) / max(len(text.split()), 1) for text, refs in units])
    return np.where(held, 2.0 + gain, -np.arange(len(units)) / len(units))


def _figures(examples: list[Example], scores: list[np.ndarray]) -> dict[str, float]:
    any5, tok = [], []
    for (_, _, units, gold), s in zip(examples, scores):
        ranked = [units[i] for i in np.argsort(-s, kind="stable")]
        any5.append(r_any(ranked, gold, 5))
        tok.append(r_tok(ranked, gold, 1000))
    return {"R_any@5": 100 * float(np.mean(any5)), "Rtok@1000": 100 * float(np.mean(tok))}


def _fit(examples: list[Example], start: np.ndarray, l2: float, steps: int = 400,
         lr: float = 0.05) -> np.ndarray:
    """w minimising the listwise loss -log P(some evidence candidate first) under
    softmax(X w), plus l2 |w - start|^2, by full-batch Adam from `start`."""
    labelled = [(x, held) for x, held, _, _ in examples if held.any() and not held.all()]
    if not labelled:
        return start
    width = max(len(x) for x, _ in labelled)
    xs = np.zeros((len(labelled), width, len(start)))
    valid, pos = np.zeros((2, len(labelled), width), bool)
    for i, (x, held) in enumerate(labelled):
        xs[i, :len(x)], valid[i, :len(x)], pos[i, :len(x)] = x, True, held
    w, m, v = start.copy(), np.zeros_like(start), np.zeros_like(start)
    for t in range(1, steps + 1):
        s = np.where(valid, xs @ w, -np.inf)
        d = _softmax(s) - _softmax(np.where(pos, s, -np.inf))
        grad = np.einsum("nk,nkf->f", d, xs) / len(labelled) + 2 * l2 * (w - start)
        m, v = 0.9 * m + 0.1 * grad, 0.999 * v + 0.001 * grad ** 2
        w -= lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return w


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
