"""`rmm bench speed`: search latency on a large synthetic bank, against raw faiss in one run."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from ..embed import default_embedder
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
    parser.add_argument("--queries", type=int, default=300, help="timed searches")
    parser.add_argument("--k", type=int, default=5, help="hits per search")
    parser.add_argument("--db", default=None, help="store (default: a temporary SQLite file)")
    parser.add_argument("--postgres", nargs="?", const="auto", default=None, metavar="URL",
                        help="also time PostgreSQL + pgvector beside SQLite in the same run "
                             "(no URL: start a throw-away server with pgserver)")


def synthetic_bank(n: int, dim: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """Random 12-word texts and random unit vectors (search cost does not depend on meaning)."""
    rng = np.random.default_rng(seed)
    words = np.asarray(_WORDS)
    texts = [" ".join(row) for row in words[rng.integers(0, len(words), size=(n, 12))]]
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return texts, vectors


def fill(mem: ReflectiveMemory, user_id: str, texts: list[str], vectors: np.ndarray) -> None:
    """Write the bank straight into the store as one committed reflection."""
    store = mem.store
    store.append_turns(user_id, "synthetic", [Turn("bench", "synthetic bank")], None,
                       time.time())
    adds = [NewMemory(Memory(id=new_memory_id(), user_id=user_id, text=t, key=t,
                             refs=["synthetic:1"]), v[None, :])
            for t, v in zip(texts, vectors)]
    store.commit_reflection(user_id, "synthetic", 0, 1, adds, [])


def run(args: argparse.Namespace) -> int:
    import faiss

    if args.postgres:
        from .speed_pg import run_speed_postgres

        run_speed_postgres(postgres_url=None if args.postgres == "auto" else args.postgres,
                           memories=args.memories, queries=args.queries, k=args.k)
        return 0

    embedder = default_embedder()
    texts, vectors = synthetic_bank(args.memories, embedder.dim)
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
        mem.search(queries[0], user_id=user, k=args.k)  # builds the index
        build_s = time.perf_counter() - t0
        search_ms, embed_ms, faiss_ms = [], [], []
        flat = faiss.IndexFlatIP(embedder.dim)
        flat.add(vectors)
        for q in queries:
            t0 = time.perf_counter()
            qv = embedder.embed([q])[0]
            embed_ms.append(1000 * (time.perf_counter() - t0))
            t0 = time.perf_counter()
            flat.search(qv[None, :], mem.config.candidates)
            faiss_ms.append(1000 * (time.perf_counter() - t0))
            t0 = time.perf_counter()
            mem.search(q, user_id=user, k=args.k)
            search_ms.append(1000 * (time.perf_counter() - t0))
        mem.forget(user_id=user)
        mem.close()
    s50, s95 = np.percentile(search_ms, [50, 95])
    e50 = float(np.median(embed_ms))
    f50, f95 = np.percentile(faiss_ms, [50, 95])
    retrieval = np.asarray(search_ms) - np.asarray(embed_ms)
    r50, r95 = np.percentile(retrieval, [50, 95])
    print(f"bank: {args.memories} memories, dim {embedder.dim}; write {write_s:.1f} s, "
          f"index build {build_s:.1f} s; {args.queries} queries, k={args.k}")
    print(f"{'':<34}{'p50 ms':>10}{'p95 ms':>10}")
    print(f"{'rmm search (end to end)':<34}{s50:>10.2f}{s95:>10.2f}")
    print(f"{'  query embedding':<34}{e50:>10.2f}")
    print(f"{'  retrieval (search - embedding)':<34}{r50:>10.2f}{r95:>10.2f}")
    print(f"{'raw faiss IndexFlatIP, same vectors':<34}{f50:>10.2f}{f95:>10.2f}")
    raw_e2e = float(np.median(np.asarray(embed_ms) + np.asarray(faiss_ms)))
    print(f"{'raw faiss + query embedding':<34}{raw_e2e:>10.2f}")
    print(f"ratio (p50): rmm end to end / (embedding + raw faiss) {s50 / raw_e2e:.2f}x; "
          f"rmm retrieval / raw faiss {r50 / f50:.2f}x")
    return 0
