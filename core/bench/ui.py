"""`rmm bench ui`: how fast the inspector answers on a large bank. A synthetic user of
`--memories` memories (the speed benches' bank) in a SQLite file, `rmm ui`'s app served by
uvicorn on a loopback port in this process, pages fetched over HTTP: the user's first and
a deep page of memories, a filtered list, a memory, and a query's explained breakdown;
beside them the in-process search with and without `explain=True`."""

from __future__ import annotations

import argparse
import socket
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import numpy as np

from ..memory import ReflectiveMemory
from ..models.embed import default_embedder
from .bank import fill, synthetic_bank, timed, zipf_vocabulary

USER = "bench"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--memories", type=int, default=10_000, help="bank size")
    parser.add_argument("--repeats", type=int, default=20, help="timed fetches per page")
    parser.add_argument("--queries", type=int, default=50, help="timed searches per path")


def run(args: argparse.Namespace) -> int:
    from ..ui.command import load_stack

    _, uvicorn, _ = load_stack()  # a missing extra fails before the bank is built
    from ..ui.app import build_app

    with tempfile.TemporaryDirectory() as folder:
        embedder = default_embedder()
        vocab = zipf_vocabulary(embedder)
        queries = vocab.queries(args.queries + 5, seed=7)
        with ReflectiveMemory.open(str(Path(folder) / "ui.sqlite"), embedder=embedder) as mem:
            texts, vectors = synthetic_bank(args.memories, embedder, vocab=vocab)
            fill(mem, USER, texts, vectors)
            some = mem.store.memories(USER, with_versions=False)[args.memories // 2].id
            server, url = _serve(uvicorn, build_app(mem))
            try:
                rows = _pages(url, some, queries, args.repeats)
                for q in queries[:5]:  # warm: model, index, reranker weights
                    mem.search(q, user_id=USER, explain=True)
                plain = timed(lambda q: mem.search(q, user_id=USER), queries[5:])
                explained = timed(lambda q: mem.search(q, user_id=USER, explain=True),
                                  queries[5:])
            finally:
                server.should_exit = True
    print(f"rmm ui on {args.memories:,} memories of one user (SQLite, served by uvicorn on "
          f"loopback, fetched over HTTP; {args.repeats} fetches a page, {args.queries} "
          "queries a search path)")
    print(f"{'what':<44}{'p50 ms':>9}{'p95 ms':>9}")
    for name, ms in [*rows, ("search in process", plain),
                     ("search in process, explain=True", explained)]:
        print(f"{name:<44}{np.percentile(ms, 50):>9.1f}{np.percentile(ms, 95):>9.1f}")
    return 0


def _serve(uvicorn, app) -> tuple[object, str]:
    """uvicorn serving `app` on a free loopback port in a thread, once it is listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the inspector did not start")
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"


def _pages(url: str, memory_id: str, queries: list[str], repeats: int
           ) -> list[tuple[str, list[float]]]:
    """Milliseconds of each page fetch (one untimed fetch of each first)."""
    pages = {
        "memories, first page": {"u": USER},
        "memories, page 100": {"u": USER, "page": 100},
        "memories, text filter": {"u": USER, "text": "the"},
        "one memory": {"u": USER, "id": memory_id},
    }
    out = []
    for name, params in pages.items():
        path = "/memory" if "id" in params else "/user"
        link = f"{url}{path}?{urlencode(params)}"
        _fetch(link)
        out.append((name, timed(_fetch, [link] * repeats)))
    searches = [f"{url}/search?{urlencode({'u': USER, 'q': q})}" for q in queries]
    _fetch(searches[0])
    out.append(("query breakdown page (search explained)", timed(_fetch, searches[1:])))
    return out


def _fetch(link: str) -> None:
    with urllib.request.urlopen(link, timeout=60) as response:
        if response.status != 200:
            raise RuntimeError(f"{link} answered {response.status}")
        response.read()
