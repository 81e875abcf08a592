"""The search index on large banks: the IVF shortlist must find what exhaustive scoring finds.

Banks are built straight from vectors (word-bag mixes of real MiniLM word embeddings), so a
5,000-memory bank takes a second; `exact=False` forces the shortlist path that banks above
`EXACT_LIMIT` take.
"""

from __future__ import annotations

import numpy as np
import pytest

from rmm_core.read.index import DEPTH, EXACT_LIMIT, LEXICAL_DEPTH, UserIndex
from rmm_core.storage.base import IndexData

WORDS = ("garden hiking piano budget wedding puppy novel pottery marathon sushi museum lake "
         "teacher startup charity sunset yoga cousin festival bakery").split()


@pytest.fixture(scope="module")
def bank(embedder):
    rng = np.random.default_rng(7)
    n = 5000
    picks = rng.integers(0, len(WORDS), size=(n, 6))
    keys = [" ".join(WORDS[i] for i in row) for row in picks]
    word_vecs = embedder.embed(WORDS)
    unit = word_vecs[picks].mean(axis=1) + 0.05 * rng.standard_normal((n, embedder.dim))
    turn = word_vecs[picks[:, :3]].mean(axis=1) + 0.05 * rng.standard_normal((n, embedder.dim))
    vectors = np.stack([unit, turn], axis=1).reshape(2 * n, -1).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    # one rare memory that only BM25 can single out, and one that only the vectors can
    keys[1234] = "zeppelin tickets for the airship museum"
    data = IndexData(generation=1, ids=[f"m{i}" for i in range(n)], keys=keys,
                     vectors=vectors, owner=np.repeat(np.arange(n), 2),
                     sessions=[f"s{i // 10}" for i in range(n)])
    return UserIndex(data), embedder


def test_shortlist_agrees_with_exhaustive_scoring(bank):
    index, embedder = bank
    rng = np.random.default_rng(3)
    shared = []
    for _ in range(30):
        query = " ".join(rng.choice(WORDS, size=3))
        vec = embedder.embed([query])[0]
        fast = index.search(query, vec, top=20, exact=False)
        exact = index.search(query, vec, top=20, exact=True)
        shared.append(len(set(fast.positions) & set(exact.positions)) / 20)
        common = set(fast.positions) & set(exact.positions)
        for p in common:  # the same memory gets the same score either way, up to the estimate
            f = float(fast.fused[list(fast.positions).index(p)])
            e = float(exact.fused[list(exact.positions).index(p)])
            assert abs(f - e) < 0.5
    assert np.mean(shared) >= 0.85, np.mean(shared)


def test_shortlist_keeps_a_lexical_only_match(bank):
    index, embedder = bank
    query = "zeppelin"
    found = index.search(query, embedder.embed([query])[0], top=5, exact=False)
    assert 1234 in found.positions


def test_small_banks_are_always_exhaustive(embedder):
    n = 2 * (DEPTH + LEXICAL_DEPTH)
    vectors = embedder.embed([f"note {i}" for i in range(50)])
    data = IndexData(1, [f"m{i}" for i in range(n)], [f"note {i % 50}" for i in range(n)],
                     vectors[np.arange(n) % 50], np.arange(n), [])
    index = UserIndex(data)
    vec = embedder.embed(["note 7"])[0]
    assert list(index.search("note 7", vec, top=10, exact=False).positions) == \
        list(index.search("note 7", vec, top=10, exact=True).positions)
    assert index._chain.ann is None  # no approximate index was built
    assert EXACT_LIMIT > 2 * (DEPTH + LEXICAL_DEPTH)


def test_a_small_bank_s_dense_signals_come_from_one_product(embedder):
    """On a bank of up to Z_SAMPLE memories, one product over every vector row gives each
    memory's own cosine and its best turn cosine (its own one when it has no turns, 0 when
    it has no vectors at all)."""
    rng = np.random.default_rng(3)
    counts = [3, 1, 0, 2, 1, 3] * 50  # own vector + turns; some own only, some none
    vectors = rng.standard_normal((sum(counts), embedder.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    n = len(counts)
    index = UserIndex(IndexData(1, [f"m{i}" for i in range(n)], [f"note {i}" for i in range(n)],
                                vectors, np.repeat(np.arange(n), counts), []))
    query = vectors[7]
    unit, turn = index._dense_everywhere(query)
    for p in range(n):
        sims = index.rows_of(p) @ query
        own = sims[0] if len(sims) else 0.0
        assert np.isclose(unit[p], own, atol=1e-6)
        assert np.isclose(turn[p], sims[1:].max() if len(sims) > 1 else own, atol=1e-6)
    assert np.array_equal(index.unit_scores(query), unit)  # the same product's values
