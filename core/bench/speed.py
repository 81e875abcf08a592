"""`rmm bench speed`: search latency on a large synthetic bank against raw faiss in one run,
the first search after a new session, many users in one process, ingest on a large bank."""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..memory import ReflectiveMemory
from ..models.embed import default_embedder, query_vectors
from ..read.ann import BLOCK, evenly, ivf_index, nlist_for
from ..read.index import EXACT_LIMIT
from ..types import Turn
from .bank import VOCABULARIES, Vocabulary, bank_chunks, fill_chunks, rss_mb, timed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--memories", type=int, default=100_000, help="bank size")
    parser.add_argument("--turns", type=int, default=2,
                        help="turn vectors per memory besides its own (LoCoMo has 2-5)")
    parser.add_argument("--queries", type=int, default=300, help="timed searches")
    parser.add_argument("--k", type=int, default=5, help="hits per search")
    parser.add_argument("--sessions", type=int, default=20,
                        help="2-turn sessions ended, each followed by a timed first search")
    parser.add_argument("--vocab", choices=sorted(VOCABULARIES), default="zipf",
                        help="the bank's words: zipf = several thousand real words drawn "
                             "Zipf-like (default); small = the 73 words of earlier benches")
    parser.add_argument("--db", default=None, help="store (default: a temporary SQLite file)")
    parser.add_argument("--users", type=int, default=None, metavar="N",
                        help="instead: N users of --memories memories each in one process, "
                             "each searched cold (index built) then warm, within --cache-bytes")
    parser.add_argument("--cache-bytes", type=float, default=float(2**30),
                        help="the memory's storage.cache_bytes (default 1 GiB, as a default "
                             "install)")
    parser.add_argument("--keep-bank", action="store_true",
                        help="with --db: search the bank of --memories memories an earlier "
                             "run wrote there instead of writing it again")
    parser.add_argument("--ingest-sessions", type=int, default=None, metavar="N",
                        help="instead: the time to reflect N 3-turn sessions into an empty "
                             "bank against N more into a bank of --memories memories")
    parser.add_argument("--postgres", nargs="?", const="auto", default=None, metavar="URL",
                        help="on PostgreSQL + pgvector instead: in-database search beside "
                             "in-process search of one bank (no URL: start a throw-away "
                             "server with pgserver)")
    parser.add_argument("--shared-buffers", default=None, metavar="SIZE",
                        help="with --postgres and no URL: the started server's shared_buffers, "
                             "e.g. 1GB (default: pgserver's, 128MB)")


def chat_session(rng: np.random.Generator, vocab: Vocabulary, turns: int = 2) -> list[Turn]:
    """A short user/assistant exchange of random bank words."""
    return [Turn("user" if i % 2 == 0 else "assistant", text)
            for i, text in enumerate(vocab.texts(vocab.draw(rng, (turns, 10))))]


def run(args: argparse.Namespace) -> int:
    if args.postgres:
        from .speed_pg import run_speed_postgres

        run_speed_postgres(postgres_url=None if args.postgres == "auto" else args.postgres,
                           memories=args.memories, queries=args.queries, k=args.k,
                           turns=args.turns, vocab=args.vocab,
                           shared_buffers=args.shared_buffers)
        return 0
    embedder = default_embedder()
    runner = (run_users if args.users else run_ingest if args.ingest_sessions
              else run_bank)
    with tempfile.TemporaryDirectory() as tmp:
        target = args.db or str(Path(tmp) / "speed.sqlite")
        mem = ReflectiveMemory.open(target, embedder=embedder, progress=False,
                                    storage={"cache_bytes": int(args.cache_bytes)})
        try:
            runner(mem, VOCABULARIES[args.vocab](embedder), args)
        finally:
            mem.close()
    return 0


def run_bank(mem: ReflectiveMemory, vocab: Vocabulary, args: argparse.Namespace) -> None:
    """One user's bank: search against raw faiss with the same kind of index, the first
    search after each new session, RSS."""
    embedder = mem.embedder
    queries = vocab.queries(args.queries)
    user = f"speed-{args.memories}"
    t0 = time.perf_counter()
    # an earlier run's timed sessions added a few memories to the bank it leaves
    kept = args.keep_bank and args.db and \
        mem.store.counts(user).get("memories", 0) >= args.memories
    if not kept:
        mem.forget(user_id=user)
        fill_chunks(mem, user, bank_chunks(args.memories, vocab, turns=args.turns))
    write_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    mem.search(queries[0], user_id=user, k=args.k)  # loads and indexes the bank
    build_s = time.perf_counter() - t0
    index = mem._search.indexes.get(user)
    rss, peak = rss_mb()
    query_vecs = query_vectors(embedder, queries)
    top = mem.config.search.candidates
    raw, raw_name = _raw_faiss(index._units_at, len(index), len(index) > EXACT_LIMIT)
    search_ms, embed_ms, faiss_ms = interleaved([
        lambda i: mem.search(queries[i], user_id=user, k=args.k),
        lambda i: query_vectors(embedder, [queries[i]]),
        lambda i: raw.search(query_vecs[i][None, :], top)], range(len(queries)))
    agreement = exact_agreement(mem, user, queries[:100], top)
    first_ms, cached_ms, reflect_ms = _after_sessions(mem, vocab, user, queries, args)
    s50, s95 = np.percentile(search_ms, [50, 95])
    e50 = float(np.median(embed_ms))
    f50, f95 = np.percentile(faiss_ms, [50, 95])
    r50, r95 = np.percentile(np.asarray(search_ms) - np.asarray(embed_ms), [50, 95])
    mode = "exhaustive" if args.memories <= EXACT_LIMIT else "IVF shortlist"
    print(f"bank: {len(index)} memories x {1 + args.turns} vectors, dim {embedder.dim}, "
          f"{len(vocab.words)}-word {args.vocab} vocabulary "
          f"({mode}); {'kept from an earlier run' if kept else f'write {write_s:.1f} s'}, "
          f"load + index {build_s:.1f} s; "
          f"{args.queries} queries, k={args.k}")
    print(f"RSS after load + index: {rss:.0f} MiB (peak so far {peak:.0f} MiB); index "
          f"{index.nbytes / 2**20:.0f} MiB by its own count")
    print(f"{'':<40}{'p50 ms':>10}{'p95 ms':>10}")
    print(f"{'rmm search (end to end)':<40}{s50:>10.2f}{s95:>10.2f}")
    print(f"{'  query embedding':<40}{e50:>10.2f}")
    print(f"{'  retrieval (search - embedding)':<40}{r50:>10.2f}{r95:>10.2f}")
    print(f"{'raw faiss ' + raw_name:<40}{f50:>10.2f}{f95:>10.2f}")
    raw_e2e = float(np.median(np.asarray(embed_ms) + np.asarray(faiss_ms)))
    print(f"{'raw faiss + query embedding':<40}{raw_e2e:>10.2f}")
    print(f"ratio (p50): rmm end to end / (embedding + raw faiss) {s50 / raw_e2e:.2f}x; "
          f"rmm retrieval / raw faiss {r50 / f50:.2f}x")
    print(f"top-{top} candidates shared with exhaustive scoring: {100 * agreement:.1f}% "
          f"({len(queries[:100])} queries)")
    if first_ms:
        a50, a95 = np.percentile(first_ms, [50, 95])
        c50 = float(np.median(cached_ms))
        print(f"after each of {len(first_ms)} new 2-turn sessions (end_session p50 "
              f"{np.median(reflect_ms):.0f} ms): first search p50 {a50:.1f} ms / p95 "
              f"{a95:.1f} ms, a cached search {c50:.1f} ms: {a50 - c50:+.1f} ms")


def interleaved(calls: list[Callable[[Any], Any]], items: Any) -> list[list[float]]:
    """Milliseconds of each call on each item, the calls taking turns item by item, so
    that a machine's load moving during a run weighs on all of them alike."""
    out: list[list[float]] = [[] for _ in calls]
    for item in items:
        for call, times in zip(calls, out):
            times += timed(call, [item])
    return out


def _raw_faiss(units_at: Callable[[np.ndarray], np.ndarray], n: int, approximate: bool
               ) -> tuple[Any, str]:
    """Raw faiss over the bank's unit vectors (`units_at(positions)`, added a block at a
    time) with the index rmm uses on such a bank: the same IVF (8-bit codes, nlist, nprobe,
    training sample) on large ones, else a flat scan."""
    import faiss

    sample = units_at(evenly(n, 40 * nlist_for(n)))
    if approximate:
        index = ivf_index(sample.shape[1], nlist_for(n))
        index.train(sample)
        name = f"IVF-SQ8 nlist {index.nlist} nprobe {index.nprobe}"
    else:
        index, name = faiss.IndexFlatIP(sample.shape[1]), "IndexFlatIP, same vectors"
    for start in range(0, n, BLOCK):
        index.add(units_at(np.arange(start, min(n, start + BLOCK))))
    return index, name


def _after_sessions(mem: ReflectiveMemory, vocab: Vocabulary, user: str, queries: list[str],
                    args: argparse.Namespace) -> tuple[list[float], list[float], list[float]]:
    """Per new 2-turn session: the time of end_session, of the first search after it and
    of a second (cached) search."""
    rng = np.random.default_rng(2)
    first, cached, reflect = [], [], []
    for i in range(args.sessions):
        mem.append(chat_session(rng, vocab), user_id=user, session_id=f"new-{i}")
        t0 = time.perf_counter()
        mem.end_session(user_id=user, session_id=f"new-{i}")
        reflect.append(1000 * (time.perf_counter() - t0))
        q = queries[i % len(queries)]
        first += timed(lambda q: mem.search(q, user_id=user, k=args.k), [q])
        cached += timed(lambda q: mem.search(q, user_id=user, k=args.k), [q])
    return first, cached, reflect


def run_users(mem: ReflectiveMemory, vocab: Vocabulary, args: argparse.Namespace) -> None:
    """Many small users in one process: each searched cold, then all again, RSS."""
    n_users, per_user = args.users, args.memories
    users = [f"user-{i}" for i in range(n_users)]
    t0 = time.perf_counter()
    for i, user in enumerate(users):  # each user's bank made as it is written
        fill_chunks(mem, user, bank_chunks(per_user, vocab, turns=args.turns, seed=i))
    write_s = time.perf_counter() - t0
    queries = vocab.queries(n_users)
    order = np.random.default_rng(1).permutation(n_users)
    cold = timed(lambda i: mem.search(queries[i], user_id=users[i], k=args.k), order)
    rss_cold, _ = rss_mb()
    again = timed(lambda i: mem.search(queries[i], user_id=users[i], k=args.k), order)
    rss, peak = rss_mb()
    print(f"{n_users} users x {per_user} memories x {1 + args.turns} vectors in one process, "
          f"storage.cache_bytes {args.cache_bytes / 2**20:.1f} MiB; write {write_s:.0f} s")
    print(f"cold search (index built from the store) p50 {np.median(cold):.1f} ms, p95 "
          f"{np.percentile(cold, 95):.1f} ms")
    print(f"second pass over every user p50 {np.median(again):.1f} ms, p95 "
          f"{np.percentile(again, 95):.1f} ms ({len(mem._search.indexes.cache)} entries cached, "
          f"{mem._search.indexes.cache.nbytes / 2**20:.2f} MiB by their own count)")
    print(f"RSS after the cold pass {rss_cold:.0f} MiB, after the second {rss:.0f} MiB, "
          f"peak {peak:.0f} MiB")


def run_ingest(mem: ReflectiveMemory, vocab: Vocabulary, args: argparse.Namespace) -> None:
    """Reflection speed: N sessions into an empty bank, against N more into a large one."""
    n = args.ingest_sessions
    rng = np.random.default_rng(3)
    user = "ingest"

    def ingest(tag: str) -> float:
        t0 = time.perf_counter()
        for i in range(n):
            mem.add_session(chat_session(rng, vocab, 3), user_id=user, session_id=f"{tag}-{i}")
        return time.perf_counter() - t0

    first = ingest("first")
    size = len(mem._search.indexes.get(user))
    fill_chunks(mem, user, bank_chunks(max(args.memories - size, 0), vocab, turns=args.turns))
    mem.search("warm the index", user_id=user)
    big = len(mem._search.indexes.get(user))
    last = ingest("last")
    print(f"{n} 3-turn sessions reflected into an empty bank: {first:.1f} s "
          f"({1000 * first / n:.0f} ms a session); {n} more into a bank of {big} memories: "
          f"{last:.1f} s ({1000 * last / n:.0f} ms a session); ratio {last / first:.2f}x")


def exact_agreement(mem: ReflectiveMemory, user_id: str, queries: list[str], top: int) -> float:
    """Mean share of the top-`top` fused candidates that exhaustive scoring also ranks there."""
    index = mem._search.indexes.get(user_id)
    shares = []
    for q in queries:
        qv = query_vectors(mem.embedder, [q])[0]
        fast = index.search(q, qv, top=top, weights=mem._search.weights).positions
        exact = index.search(q, qv, top=top, weights=mem._search.weights, exact=True).positions
        shares.append(len(set(fast) & set(exact)) / max(len(exact), 1))
    return float(np.mean(shares))
