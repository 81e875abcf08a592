"""The bank's BM25 (`Lexicon`): scores equal bm25s's after indexing the live bank afresh,
through additions and drops; `hits` gives the same scores at the slots holding a query word
alone. No fake LLM, no embedder: token lists only."""

from __future__ import annotations

import bm25s
import numpy as np

from rmm_core.read.bm25 import Lexicon

WORDS = [f"w{i}" for i in range(60)]


def docs(rng: np.random.Generator, n: int) -> list[list[str]]:
    """Random token lists, Zipf-like (a few words in many documents, most in few)."""
    weights = 1 / np.arange(1, len(WORDS) + 1)
    return [list(rng.choice(WORDS, size=int(rng.integers(1, 12)), p=weights / weights.sum()))
            for _ in range(n)]


def test_scores_and_hits_equal_bm25s_on_the_live_bank_through_changes():
    rng = np.random.default_rng(7)
    bank = docs(rng, 300)
    lexicon = Lexicon.build(bank)
    alive = [True] * len(bank)
    for step in range(6):
        if step:  # some new documents, some old ones dropped (a delta, then a merge)
            new = docs(rng, int(rng.integers(5, 80)))
            dropped = rng.choice(len(bank), size=int(rng.integers(0, 20)), replace=False)
            lexicon = lexicon.extend(new, dropped)
            bank += new
            alive += [True] * len(new)
            for slot in dropped:
                alive[slot] = False
        live = np.flatnonzero(alive)
        reference = bm25s.BM25()
        reference.index([bank[i] for i in live], show_progress=False)
        for _ in range(10):
            query = list(rng.choice(WORDS + ["unknown"], size=int(rng.integers(1, 5))))
            scores = lexicon.scores(query)
            want = np.zeros(len(bank), dtype=np.float32)
            known = [t for t in query if t in reference.vocab_dict]
            if known:
                want[live] = reference.get_scores(known)
            np.testing.assert_allclose(scores, want, rtol=2e-6, atol=1e-7)
            slots, values = lexicon.hits(query)
            assert np.array_equal(slots, np.flatnonzero(scores))
            assert np.array_equal(values, scores[slots])  # the same float32 sums
