"""Large banks without whole-bank copies: the store reads a bank's vectors into one buffer
that the index keeps (and appends to), the approximate index takes them a block at a time,
and a shortlisted search ranks as it did when it scored every memory. Also the benches'
synthetic bank: Zipf-like words from the packaged tokenizer, generated in chunks.

Real SQLite files and the real embedder; banks are filled with random vectors where what is
checked (copies, blocks, shortlist bookkeeping) does not depend on what the vectors mean. No
test uses a fake LLM.
"""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np

import rmm_core.read.ann as ann_module
import rmm_core.read.index as index_module
from rmm_core.bench.bank import bank_chunks, small_vocabulary, zipf_vocabulary
from rmm_core.read.ann import Ann
from rmm_core.read.bm25 import Lexicon
from rmm_core.read.index import UserIndex
from rmm_core.storage import open_store
from rmm_core.storage.base import NewMemory
from rmm_core.types import Memory, new_memory_id


def fill(store, user: str, n: int, dim: int, seed: int = 0) -> np.ndarray:
    """`n` memories (own vector + one turn row) of a few shared words; their vectors."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, 2, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
    store.add_memories(user, [
        NewMemory(Memory(id=new_memory_id(), user_id=user, text=f"w{i % 40} w{i % 13} n{i}",
                         key=f"w{i % 40} w{i % 13} n{i}", refs=[]), v)
        for i, v in enumerate(vectors)], source="direct")
    return vectors


def shortlisted(tmp_path, monkeypatch, embedder):
    """A 6,000-memory bank searched by shortlist (EXACT_LIMIT lowered to 1,000): its store,
    index, a query with its vector, and that query's top 20."""
    monkeypatch.setattr(index_module, "EXACT_LIMIT", 1000)
    store = open_store(str(tmp_path / "m.sqlite"))
    fill(store, "u", 6000, dim=embedder.dim)
    index = UserIndex(store.index_data("u"))
    query = "w3 w7 n4242"
    vec = embedder.embed([query])[0]
    return store, index, query, vec, index.search(query, vec, top=20)


def test_the_index_keeps_the_vectors_the_store_read(tmp_path):
    store = open_store(str(tmp_path / "m.sqlite"))
    vectors = fill(store, "u", 700, dim=16)
    data = store.index_data("u")
    index = UserIndex(data)
    assert np.shares_memory(index._chain.rows, data.vectors)  # no second copy
    assert np.array_equal(index.rows_of(5), vectors[5])
    before = data.vectors.copy()
    fill(store, "u", 30, dim=16, seed=1)  # appended into the buffer's free rows
    later = index.apply(store.index_changes("u", index.generation))
    assert later is not None
    assert len(later) == 730
    assert np.array_equal(data.vectors, before)  # the older snapshot's rows untouched
    assert np.array_equal(later.rows_of(729), UserIndex(store.index_data("u")).rows_of(729))
    store.close()


def test_a_caller_s_own_array_is_copied_not_taken(tmp_path):
    store = open_store(str(tmp_path / "m.sqlite"))
    fill(store, "u", 50, dim=8)
    data = store.index_data("u")
    mine = np.concatenate([data.vectors, np.ones((10, 8), dtype=np.float32)])
    data.vectors = mine[:len(data.vectors)]  # a view of an array the caller still holds
    index = UserIndex(data)
    assert not np.shares_memory(index._chain.rows, mine)
    store.close()


def test_the_approximate_index_takes_vectors_a_block_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setattr(ann_module, "BLOCK", 500)
    units = np.random.default_rng(0).standard_normal((2100, 16)).astype(np.float32)
    asked = []

    def units_at(positions):
        asked.append(len(positions))
        return units[positions]

    ann = Ann(units_at, np.arange(2100))
    training, *added = asked  # the training sample, then the blocks added
    assert training == 2100
    assert added == [500, 500, 500, 500, 100]
    assert ann.index.ntotal == 2100
    assert ann.search(units[1234], 1)[0] == 1234


def test_a_shortlisted_search_scales_bm25_over_the_whole_bank(tmp_path, monkeypatch,
                                                               embedder):
    """The shortlist path z-scores BM25 with its mean and spread over every memory, computed
    from the posting lists alone, and ranks close to exhaustive scoring."""
    monkeypatch.setattr(index_module, "EXACT_LIMIT", 1000)
    store = open_store(str(tmp_path / "m.sqlite"))
    fill(store, "u", 6000, dim=embedder.dim)
    index = UserIndex(store.index_data("u"))
    shared = []
    for query in ("w3 w7", "w11 n4242", "w39"):
        vec = embedder.embed([query])[0]
        fast = index.search(query, vec, top=20)
        lexical = index.lexical_scores(query)
        assert np.isclose(fast.scale.lexical[0], lexical.mean(), rtol=1e-5)
        assert np.isclose(fast.scale.lexical[1], lexical.std(), rtol=1e-4)
        exact = index.search(query, vec, top=20, exact=True)
        shared.append(len(set(fast.positions) & set(exact.positions)) / 20)
    assert np.mean(shared) >= 0.9
    store.close()


def test_a_shortlisted_search_makes_no_bm25_array_over_every_memory(tmp_path, monkeypatch,
                                                                    embedder):
    """BM25 of a shortlisted search comes from the query words' postings alone (`hits`),
    not from a score per memory (an array and a scan of the whole bank per query)."""
    store, index, query, vec, want = shortlisted(tmp_path, monkeypatch, embedder)

    def every_memory(self, query):
        raise AssertionError("a BM25 score per memory")

    monkeypatch.setattr(Lexicon, "scores", every_memory)
    found = index.search(query, vec, top=20)
    assert np.array_equal(found.positions, want.positions)
    assert np.array_equal(found.fused, want.fused)
    store.close()


def test_the_bench_bank_draws_real_words_zipf_like_in_chunks(embedder):
    zipf, small = zipf_vocabulary(embedder, size=2000), small_vocabulary(embedder)
    assert len(zipf.words) == 2000
    assert all(w.isalpha() and len(w) >= 3 for w in zipf.words)
    chunks = list(bank_chunks(5000, zipf, chunk=2000, seed=3))
    assert [len(texts) for texts, _ in chunks] == [2000, 2000, 1000]
    assert chunks[0][1].shape == (2000, 3, embedder.dim)
    assert np.allclose(np.linalg.norm(chunks[2][1], axis=2), 1.0, atol=1e-5)
    again = next(bank_chunks(5000, zipf, chunk=2000, seed=3))
    assert again[0] == chunks[0][0]
    assert np.array_equal(again[1], chunks[0][1])

    def head_share(vocab) -> float:  # share of memories holding the most common word
        texts = [t for texts, _ in bank_chunks(3000, vocab) for t in texts]
        counts = Counter(w for t in texts for w in set(t.split()))
        return counts.most_common(1)[0][1] / len(texts)

    assert head_share(small) > 0.15
    assert head_share(zipf) < 0.12


def test_a_shortlisted_search_looks_up_the_ivf_while_it_scores_bm25(tmp_path, monkeypatch,
                                                                    embedder):
    """The IVF lookup runs on a worker thread at the same time as the caller's BM25: each
    waits for the other to have started, which a search doing one after the other (or both
    on one thread) cannot pass. Rankings are those of the lookup done inline."""
    store, index, query, vec, want = shortlisted(tmp_path, monkeypatch, embedder)
    ivf_started, bm25_started = threading.Event(), threading.Event()
    threads = {}
    search, hits = Ann.search, Lexicon.hits

    def ivf(self, *args):
        threads["ivf"] = threading.get_ident()
        ivf_started.set()
        assert bm25_started.wait(10), "BM25 waited for the IVF lookup to end"
        return search(self, *args)

    def bm25(self, *args):
        threads["bm25"] = threading.get_ident()
        bm25_started.set()
        assert ivf_started.wait(10), "the IVF lookup waited for BM25 to end"
        return hits(self, *args)

    monkeypatch.setattr(Ann, "search", ivf)
    monkeypatch.setattr(Lexicon, "hits", bm25)
    found = index.search(query, vec, top=20)
    assert threads["bm25"] == threading.get_ident() != threads["ivf"]
    assert np.array_equal(found.positions, want.positions)
    assert np.array_equal(found.fused, want.fused)
    store.close()
