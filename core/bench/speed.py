"""`rmm bench speed`: search latency on a large synthetic bank, against raw faiss in one run."""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..embed import Embedder, default_embedder
from ..index import EXACT_LIMIT
from ..memory import ReflectiveMemory
from ..storage.base import NewMemory
from ..storage.sqlite import new_memory_id
from ..types import Memory, Turn

_WORDS = ("alice bob carol dave painting hiking guitar piano camping budget mortgage garden "
          "recipe marathon concert museum vacation lake beach dog cat puppy kitten school "
          "teacher nurse engineer startup promotion interview wedding birthday anniversary "
          "charity shelter volunteer adoption novel poetry pottery sunrise sunset mountain "
          "river city festival parade baseball soccer basketball yoga meditation therapy "
          "friendship family cousin grandmother neighbour january march june october 2022 "
          "2023 weekend morning evening coffee tea bakery cookies pasta sushi").split()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--memories", type=int, default=100_000, help="bank size")
    parser.add_argument("--turns", type=int, default=2,
                        help="turn vectors per memory besides its own (LoCoMo has 2-5)")
    parser.add_argument("--queries", type=int, default=300, help="timed searches")
    parser.add_argument("--k", type=int, default=5, help="hits per search")
    parser.add_argument("--db", default=None, help="store (default: a temporary SQLite file)")
    parser.add_argument("--postgres", nargs="?", const="auto", default=None, metavar="URL",
                        help="on PostgreSQL + pgvector instead: in-database search beside "
                             "in-process search of one bank (no URL: start a throw-away "
                             "server with pgserver)")


def synthetic_bank(n: int, embedder: Embedder, *, turns: int = 2,
                   seed: int = 0) -> tuple[list[str], np.ndarray]:
    """Random 12-word texts and their vectors, shape (n, 1 + turns, dim).

    A text's vector is the mean of its words' embeddings plus noise, and each turn vector
    that of a third of its words, so that the bank has the clustered structure real
    memories have (an approximate index behaves differently on uniform noise).
    """
    rng = np.random.default_rng(seed)
    words = np.asarray(_WORDS)
    picks = rng.integers(0, len(words), size=(n, 12))
    texts = [" ".join(row) for row in words[picks]]
    word_vecs = embedder.embed(list(words))
    parts = [picks] + [picks[:, 4 * (t % 3): 4 * (t % 3) + 4] for t in range(turns)]
    vectors = np.stack([word_vecs[p].mean(axis=1) for p in parts], axis=1)
    vectors += 0.05 * rng.standard_normal(vectors.shape).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
    return texts, vectors.astype(np.float32)


def fill(mem: ReflectiveMemory, user_id: str, texts: list[str], vectors: np.ndarray) -> None:
    """Write the bank straight into the store as one committed reflection."""
    store = mem.store
    store.append_turns(user_id, "synthetic", [Turn("bench", "synthetic bank")], None,
                       time.time())
    adds = [NewMemory(Memory(id=new_memory_id(), user_id=user_id, text=t, key=t,
                             refs=["synthetic:1"]), v)
            for t, v in zip(texts, vectors)]
    store.commit_reflection(user_id, "synthetic", 0, 1, adds, [])


def run(args: argparse.Namespace) -> int:
    import faiss

    if args.postgres:
        from .speed_pg import run_speed_postgres

        run_speed_postgres(postgres_url=None if args.postgres == "auto" else args.postgres,
                           memories=args.memories, queries=args.queries, k=args.k,
                           turns=args.turns)
        return 0

    embedder = default_embedder()
    texts, vectors = synthetic_bank(args.memories, embedder, turns=args.turns)
    rng = np.random.default_rng(1)
    queries = [" ".join(rng.choice(_WORDS, size=6)) for _ in range(args.queries)]
    with tempfile.TemporaryDirectory() as tmp:
        target = args.db or str(Path(tmp) / "speed.sqlite")
        mem = ReflectiveMemory.open(target, embedder=embedder, progress=False)
        user = f"speed-{args.memories}"
        mem.forget(user_id=user)
        t0 = time.perf_counter()
        fill(mem, user, texts, vectors)
        write_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        mem.search(queries[0], user_id=user, k=args.k)  # loads and indexes the bank
        build_s = time.perf_counter() - t0
        flat = faiss.IndexFlatIP(embedder.dim)
        flat.add(np.ascontiguousarray(vectors[:, 0]))
        # one loop per system: interleaved, each library's idle spinning threads (OpenMP,
        # BLAS) would slow the other down and the figures would measure that instead
        search_ms = _timed(lambda q: mem.search(q, user_id=user, k=args.k), queries)
        embed_ms = _timed(lambda q: embedder.embed([q]), queries)
        query_vecs = embedder.embed(queries)
        faiss_ms = _timed(lambda v: flat.search(v[None, :], mem.config.candidates), query_vecs)
        agreement = exact_agreement(mem, user, queries[:100], mem.config.candidates)
        mem.forget(user_id=user)
        mem.close()
    s50, s95 = np.percentile(search_ms, [50, 95])
    e50 = float(np.median(embed_ms))
    f50, f95 = np.percentile(faiss_ms, [50, 95])
    retrieval = np.asarray(search_ms) - np.asarray(embed_ms)
    r50, r95 = np.percentile(retrieval, [50, 95])
    mode = "exhaustive" if args.memories <= EXACT_LIMIT else "IVF shortlist"
    print(f"bank: {args.memories} memories x {1 + args.turns} vectors, dim {embedder.dim} "
          f"({mode}); write {write_s:.1f} s, load + index {build_s:.1f} s; "
          f"{args.queries} queries, k={args.k}")
    print(f"{'':<34}{'p50 ms':>10}{'p95 ms':>10}")
    print(f"{'rmm search (end to end)':<34}{s50:>10.2f}{s95:>10.2f}")
    print(f"{'  query embedding':<34}{e50:>10.2f}")
    print(f"{'  retrieval (search - embedding)':<34}{r50:>10.2f}{r95:>10.2f}")
    print(f"{'raw faiss IndexFlatIP, same vectors':<34}{f50:>10.2f}{f95:>10.2f}")
    raw_e2e = float(np.median(np.asarray(embed_ms) + np.asarray(faiss_ms)))
    print(f"{'raw faiss + query embedding':<34}{raw_e2e:>10.2f}")
    print(f"ratio (p50): rmm end to end / (embedding + raw faiss) {s50 / raw_e2e:.2f}x; "
          f"rmm retrieval / raw faiss {r50 / f50:.2f}x")
    print(f"top-{mem.config.candidates} candidates shared with exhaustive scoring: "
          f"{100 * agreement:.1f}% (100 queries)")
    return 0


def _timed(call: Callable[[Any], Any], items: Any) -> list[float]:
    out = []
    for item in items:
        t0 = time.perf_counter()
        call(item)
        out.append(1000 * (time.perf_counter() - t0))
    return out


def exact_agreement(mem: ReflectiveMemory, user_id: str, queries: list[str], top: int) -> float:
    """Mean share of the top-`top` fused candidates that exhaustive scoring also ranks there."""
    index = mem._index(user_id)
    shares = []
    for q in queries:
        qv = mem.embedder.embed([q])[0]
        fast = index.search(q, qv, top=top, weights=mem._weights).positions
        exact = index.search(q, qv, top=top, weights=mem._weights, exact=True).positions
        shares.append(len(set(fast) & set(exact)) / max(len(exact), 1))
    return float(np.mean(shares))
