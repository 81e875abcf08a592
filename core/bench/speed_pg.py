"""Speed on both backends in one run: ingest and search on SQLite and PostgreSQL + pgvector.

`run_speed_postgres` fills the same synthetic bank into each store and times
`ReflectiveMemory.search` (in-process faiss + BM25 snapshot, refreshed by generation) and,
for PostgreSQL, vector search inside the database (`PostgresStore.vector_search`).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..embed import default_embedder
from ..memory import ReflectiveMemory
from .speed import _WORDS, fill, synthetic_bank


def local_postgres() -> tuple[str, Any]:
    """Start a throw-away PostgreSQL 16 + pgvector with `pgserver`; (url, handle to keep)."""
    try:
        import pgserver
    except ImportError as exc:
        from ..errors import MissingDependencyError

        raise MissingDependencyError("pgserver", "test") from exc
    server = pgserver.get_server(Path(tempfile.mkdtemp(prefix="rmm-pg-")), cleanup_mode="delete")
    return server.get_uri(), server


def _time_backend(target: str, texts: list[str], vectors: np.ndarray, queries: list[str],
                  k: int, embedder: Any, db_queries: int) -> dict[str, float]:
    mem = ReflectiveMemory.open(target, embedder=embedder, progress=False,
                                session_idle_timeout=None)
    user = f"speed-{len(texts)}"
    mem.forget(user_id=user)
    t0 = time.perf_counter()
    fill(mem, user, texts, vectors)
    out = {"ingest_s": time.perf_counter() - t0}
    t0 = time.perf_counter()
    mem.search(queries[0], user_id=user, k=k)
    out["index_build_s"] = time.perf_counter() - t0
    qvecs = embedder.embed(queries[:db_queries])
    search_ms, db_ms = [], []
    for q in queries:
        t0 = time.perf_counter()
        mem.search(q, user_id=user, k=k)
        search_ms.append(1000 * (time.perf_counter() - t0))
    if hasattr(mem.store, "vector_search"):
        for qv in qvecs[:db_queries]:
            t0 = time.perf_counter()
            mem.store.vector_search(user, qv, mem.config.candidates)
            db_ms.append(1000 * (time.perf_counter() - t0))
        out["db_vector_p50_ms"], out["db_vector_p95_ms"] = np.percentile(db_ms, [50, 95])
    out["search_p50_ms"], out["search_p95_ms"] = np.percentile(search_ms, [50, 95])
    mem.forget(user_id=user)
    mem.close()
    return {key: float(v) for key, v in out.items()}


def run_speed_postgres(*, postgres_url: str | None = None, memories: int = 100_000,
                       queries: int = 200, k: int = 5, db_queries: int = 20,
                       sqlite_path: str | None = None,
                       turns: int = 2) -> dict[str, dict[str, float]]:
    """Ingest and search figures per backend; starts pgserver when no URL is given.

    In-database vector search is an exact scan, so it is timed on `db_queries` queries only.
    Prints a table and returns {"sqlite": {...}, "postgres": {...}}.
    """
    embedder = default_embedder()
    texts, vectors = synthetic_bank(memories, embedder, turns=turns)
    rng = np.random.default_rng(1)
    qs = [" ".join(rng.choice(_WORDS, size=6)) for _ in range(queries)]
    server = None
    if postgres_url is None:
        postgres_url, server = local_postgres()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        targets = {"sqlite": sqlite_path or str(Path(tmp) / "speed.sqlite"),
                   "postgres": postgres_url}
        for name, target in targets.items():
            results[name] = _time_backend(target, texts, vectors, qs, k, embedder, db_queries)
    del server
    _print(results, memories, queries, k)
    return results


def _print(results: dict[str, dict[str, float]], memories: int, queries: int, k: int) -> None:
    print(f"bank: {memories} memories; {queries} queries, k={k}")
    cols = ("ingest_s", "index_build_s", "search_p50_ms", "search_p95_ms", "db_vector_p50_ms",
            "db_vector_p95_ms")
    print(f"{'backend':<10}" + "".join(f"{c:>18}" for c in cols))
    for name, row in results.items():
        print(f"{name:<10}" + "".join(f"{row[c]:>18.2f}" if c in row else f"{'-':>18}"
                                      for c in cols))
    if {"sqlite", "postgres"} <= set(results):
        ratio = results["postgres"]["search_p50_ms"] / results["sqlite"]["search_p50_ms"]
        print(f"search p50 postgres / sqlite: {ratio:.2f}x")
