"""The supervised bound of `rmm bench rerank --set reranker=rmm --bound-epochs N`: the paper's
bilinear maps fitted with full supervision, to show how far that form can go on a split."""

from __future__ import annotations

import numpy as np

from ..errors import MissingDependencyError
from ..learn.rerank import Ranking, Reranker, Weights
from ..memory import ReflectiveMemory
from .records import Conversation


def supervised_bound(mem: ReflectiveMemory, train: list[Conversation],
                     test: list[Conversation], *, epochs: int, lr: float) -> dict[str, float]:
    """Fit W_q, W_m as well as labels allow: softmax over each train question's K candidates
    towards the cited ones, full batch, Adam (torch's autograd). R_any@5 of the candidates
    re-ordered by the fit (exploration off), before and after, on train and held-out
    questions (`reranker="rmm"`)."""
    try:
        import torch
    except ImportError as exc:
        raise MissingDependencyError("torch", "torch") from exc
    reranker = mem._reranker.scorer.reranker
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
