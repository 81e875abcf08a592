"""`rmm bench speed --postgres`: in-database search beside in-process search, one bank, one run.

One synthetic bank goes into PostgreSQL + pgvector; the same queries are searched with
`search.backend="process"` (each process loads the user's bank into its own index) and
`"database"` (pgvector HNSW and full-text search in the server, `rmm_core.read.dbsearch`). Also
timed: the first `"auto"` search, which starts the search indexes' background build, and that
build; the first search of a fresh process on each backend; pgvector's exact scan alone.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..memory import ReflectiveMemory
from ..models.embed import default_embedder, query_vectors
from .bank import VOCABULARIES, bank_chunks, fill, fill_chunks, synthetic_bank, timed

_FRESH = """
import json, sys, time
t0 = time.perf_counter()
from rmm_core import ReflectiveMemory
from rmm_core.bench.bank import rss_mb
mem = ReflectiveMemory.open(sys.argv[1], search={"backend": sys.argv[2]},
                            sessions={"idle_timeout": None})
t1 = time.perf_counter()
mem.search(sys.argv[4], user_id=sys.argv[3], k=5)
t2 = time.perf_counter()
mem.search(sys.argv[5], user_id=sys.argv[3], k=5)
t3 = time.perf_counter()
print(json.dumps({"open_s": t1 - t0, "first_ms": 1000 * (t2 - t1), "second_ms": 1000 * (t3 - t2),
                  "rss_mb": rss_mb()[1]}))
"""
"""A fresh process: open, first search, second search, peak RSS (of this program: unlike
`ru_maxrss`, `VmHWM` does not carry the parent's from before `exec`)."""


BULK = 10_000
"""Memories bulk-written beside the bank without and with the search indexes in place."""


def local_postgres(shared_buffers: str | None = None) -> tuple[str, Any]:
    """Start a throw-away PostgreSQL 16 + pgvector with `pgserver`; (url, handle to keep).
    `shared_buffers` (e.g. "1GB"): PostgreSQL's buffer cache (None: pgserver's initdb
    default, 128MB)."""
    try:
        import pgserver
    except ImportError as exc:
        from ..errors import MissingDependencyError

        raise MissingDependencyError("pgserver", "test") from exc
    if shared_buffers and not re.fullmatch(r"\d+(kB|MB|GB)?", shared_buffers):
        raise InvalidInputError(f"shared_buffers must be like 1GB, got {shared_buffers!r}")
    pgdata = Path(tempfile.mkdtemp(prefix="rmm-pg-"))
    server = pgserver.get_server(pgdata, cleanup_mode="stop" if shared_buffers else "delete")
    if shared_buffers:  # set, stopped, started again (a handle that knows the new server)
        import psycopg

        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
        server.cleanup()
        server = pgserver.get_server(pgdata, cleanup_mode="delete")
    return server.get_uri(), server


def _shared_buffers(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SHOW shared_buffers").fetchone()[0]


def fresh_process(url: str, backend: str, user: str, queries: list[str]) -> dict[str, float]:
    """The `_FRESH` figures of a new Python process searching on `backend`."""
    done = subprocess.run([sys.executable, "-c", _FRESH, url, backend, user, *queries[:2]],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_speed_postgres(*, postgres_url: str | None = None, memories: int = 100_000,
                       queries: int = 200, k: int = 5, db_queries: int = 20,
                       turns: int = 2, vocab: str = "zipf",
                       shared_buffers: str | None = None) -> dict[str, Any]:
    """Figures of both search backends on one PostgreSQL bank (pgserver when no URL, its
    `shared_buffers` as given: `local_postgres`).

    pgvector's exact scan (`PostgresStore.vector_search`) is slow, so it is timed on
    `db_queries` queries only. `vocab` names the bank's vocabulary (`bank.VOCABULARIES`).
    Prints a table and returns the figures.
    """
    from ..read.dbsearch import AUTO_MIN_MEMORIES

    if memories < AUTO_MIN_MEMORIES:  # the `auto` search would never move to the database
        raise InvalidInputError(f"--postgres needs --memories of at least {AUTO_MIN_MEMORIES}")
    embedder = default_embedder()
    words = VOCABULARIES[vocab](embedder)
    qs = words.queries(queries)
    server = None
    if postgres_url is None:
        postgres_url, server = local_postgres(shared_buffers)
    elif shared_buffers:
        raise InvalidInputError("shared_buffers is set on a server the bench starts itself; "
                                "size a given server's in its own configuration")
    user = f"speed-{memories}"
    common = {"embedder": embedder, "progress": False, "sessions": {"idle_timeout": None}}
    process = ReflectiveMemory.open(postgres_url, search={"backend": "process"}, **common)
    out: dict[str, Any] = {"memories": memories, "queries": queries, "k": k, "vocab": vocab,
                           "shared_buffers": _shared_buffers(postgres_url)}
    database = None
    try:
        process.forget(user_id=user)
        t0 = time.perf_counter()
        fill_chunks(process, user, bank_chunks(memories, words, turns=turns))
        out["ingest_s"] = time.perf_counter() - t0
        out["bulk"] = min(BULK, memories)
        bulk = synthetic_bank(out["bulk"], embedder, turns=turns, seed=1, vocab=words)
        out["bulk_plain_s"] = _bulk_write(process, *bulk)
        out["auto_first_s"], out["index_build_s"] = _auto_build(postgres_url, user, qs[0],
                                                                common)
        database = ReflectiveMemory.open(postgres_url, search={"backend": "database"}, **common)
        out["bulk_indexed_s"] = _bulk_write(process, *bulk)
        t0 = time.perf_counter()
        process.search(qs[0], user_id=user, k=k)
        out["process_load_s"] = time.perf_counter() - t0
        database.search(qs[0], user_id=user, k=k)  # warm the server's caches
        # one loop per backend: interleaved, idle library threads would slow the other
        out["process_ms"] = timed(lambda q: process.search(q, user_id=user, k=k), qs)
        out["database_ms"] = timed(lambda q: database.search(q, user_id=user, k=k), qs)
        out["embed_ms"] = timed(lambda q: query_vectors(embedder, [q]), qs)
        qvecs = query_vectors(embedder, qs[:db_queries])
        out["exact_scan_ms"] = timed(
            lambda v: database.store.vector_search(user, v,
                                                   database.config.search.candidates), qvecs)
        out["agreement"], out["top1"] = _agreement(process, database, user, qs[:100])
        for name in ("process", "database"):
            out[f"fresh_{name}"] = fresh_process(postgres_url, name, user, qs[1:])
        database.forget(user_id=user)
    finally:
        process.close()
        if database is not None:
            database.close()
        del server
    _print(out)
    return out


def _auto_build(url: str, user: str, query: str, common: dict[str, Any]
                ) -> tuple[float, float]:
    """On a store without search indexes, seconds an `auto` instance's first search of the
    user takes (in process: it starts the indexes' build in the background) and seconds
    until the indexes are valid, both from that search's start."""
    auto = ReflectiveMemory.open(url, **common)
    try:
        t0 = time.perf_counter()
        auto.search(query, user_id=user)
        first = time.perf_counter() - t0
        while not auto._search.database.wanted(user):
            time.sleep(0.2)
        return first, time.perf_counter() - t0
    finally:
        auto.close()


def _bulk_write(mem: ReflectiveMemory, texts: list[str], vectors: np.ndarray) -> float:
    """Seconds to write these memories for another user (then forgotten)."""
    t0 = time.perf_counter()
    fill(mem, "speed-bulk", texts, vectors)
    seconds = time.perf_counter() - t0
    mem.forget(user_id="speed-bulk")
    return seconds


def _agreement(process: ReflectiveMemory, database: ReflectiveMemory, user: str,
               queries: list[str]) -> tuple[float, float]:
    """Mean share of in-process top candidates that in-database search also ranks top, and
    how often both put the same memory first."""
    shares, same = [], []
    for q in queries:
        a = [c.memory.id for c in process.search(q, user_id=user).candidates]
        b = [c.memory.id for c in database.search(q, user_id=user).candidates]
        shares.append(len(set(a) & set(b)) / max(len(a), 1))
        same.append(bool(a) and bool(b) and a[0] == b[0])
    return float(np.mean(shares)), float(np.mean(same))


def _print(out: dict[str, Any]) -> None:
    print(f"bank: {out['memories']} memories ({out['vocab']} vocabulary) on PostgreSQL "
          f"(shared_buffers {out['shared_buffers']}); "
          f"write {out['ingest_s']:.1f} s, then "
          f"HNSW + full-text indexes built in the background {out['index_build_s']:.1f} s "
          f"(the auto search that started it took {out['auto_first_s']:.1f} s, in process); "
          f"{out['queries']} queries, k={out['k']}")
    print(f"bulk-writing {out['bulk']} more memories: {out['bulk_plain_s']:.1f} s without the "
          f"search indexes, {out['bulk_indexed_s']:.1f} s with them")
    print(f"{'':<42}{'p50 ms':>10}{'p95 ms':>10}")
    for label, key in (("search in process (index in this process)", "process_ms"),
                       ("search in database (pgvector HNSW + FTS)", "database_ms"),
                       ("  query embedding (in both)", "embed_ms"),
                       ("pgvector exact scan alone (no FTS)", "exact_scan_ms")):
        p50, p95 = np.percentile(out[key], [50, 95])
        print(f"{label:<42}{p50:>10.2f}{p95:>10.2f}")
    ratio = np.median(out["database_ms"]) / np.median(out["process_ms"])
    print(f"in-database / in-process search p50: {ratio:.2f}x; in-process load + index "
          f"before its first search: {out['process_load_s']:.1f} s")
    print(f"top-20 candidates of in-process search also in the in-database top 20: "
          f"{100 * out['agreement']:.1f}%; same first candidate: {100 * out['top1']:.1f}% "
          "(100 queries)")
    for name in ("process", "database"):
        f = out[f"fresh_{name}"]
        print(f"fresh process, {name:<8}: open {f['open_s']:.1f} s, first search "
              f"{f['first_ms']:.0f} ms, second {f['second_ms']:.1f} ms, peak RSS "
              f"{f['rss_mb']:.0f} MB")
