"""`rmm bench mcp`: search latency through `rmm mcp` (stdio and streamable HTTP, each a real
subprocess reached with the SDK's own client) against the in-process `search`, in one run on
one bank: what the protocol adds to a call. The search tool called in-process, without a
transport, shows how much of that is the tool layer itself, and an MCP ping on each session
(a round trip that runs no tool) how much is the transport. Both servers start the way a
host starts them, each in its own session (the SDK's stdio client does so; on Linux that
also gives each its own scheduling group, as a service started on its own has)."""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..memory import ReflectiveMemory
from ..models.embed import default_embedder
from .bank import fill, synthetic_bank, zipf_vocabulary

USER = "bench"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--memories", type=int, default=10_000, help="bank size")
    parser.add_argument("--queries", type=int, default=200, help="timed searches per path")
    parser.add_argument("--warmup", type=int, default=20,
                        help="untimed searches first on each path (model and index loaded)")
    parser.add_argument("--k", type=int, default=5, help="hits per search")
    parser.add_argument("--db", default=None, help="SQLite file (default: a temporary one)")


def run(args: argparse.Namespace) -> int:
    from ..mcp.sdk import load

    load()  # a missing extra fails here, before the bank is built
    import anyio

    with tempfile.TemporaryDirectory() as folder:
        db = args.db or str(Path(folder) / "bench.sqlite")
        embedder = default_embedder()
        vocab = zipf_vocabulary(embedder)
        queries = vocab.queries(args.warmup + args.queries, seed=7)
        with ReflectiveMemory.open(db, embedder=embedder) as mem:
            texts, vectors = synthetic_bank(args.memories, embedder, vocab=vocab)
            fill(mem, USER, texts, vectors)
            times = anyio.run(_interleaved, mem, db, queries, args, Path(folder))
    print(f"search through MCP on {args.memories:,} memories, k={args.k}, "
          f"{args.queries} queries a path, the paths taking turns ({args.warmup} untimed "
          "first)")
    base = float(np.percentile(times["in-process search"], 50))
    print(f"{'path':<27}{'p50 ms':>9}{'p95 ms':>9}{'p50 overhead':>15}{'ratio':>8}")
    for name, ms in times.items():
        p50, p95 = float(np.percentile(ms, 50)), float(np.percentile(ms, 95))
        if name.startswith("ping"):
            print(f"{name:<27}{p50:>9.2f}{p95:>9.2f}   (no tool run)")
        else:
            print(f"{name:<27}{p50:>9.2f}{p95:>9.2f}{p50 - base:>12.2f} ms{p50 / base:>7.2f}x")
    return 0


async def _interleaved(mem: ReflectiveMemory, db: str, queries: list[str],
                       args: argparse.Namespace, folder: Path) -> dict[str, list[float]]:
    """Milliseconds of each timed search on each path; the paths take turns query by query,
    so that a neighbour's load on the machine falls on all of them alike."""
    async with _session(db, False, folder) as stdio, _session(db, True, folder) as http:
        async def local(query: str) -> None:
            mem.search(query, user_id=USER, k=args.k)

        from ..mcp.access import Access
        from ..mcp.server import build

        server, _ = build(mem, Access(fixed_user=USER))

        async def tool(query: str) -> None:  # the tool layer alone: arguments, thread, JSON
            await server.call_tool("search", {"query": query, "k": args.k})

        paths = {"in-process search": local, "search tool, no transport": tool,
                 "MCP over stdio": _caller(stdio, args.k), "MCP over HTTP": _caller(http, args.k),
                 "ping over stdio": _pinger(stdio), "ping over HTTP": _pinger(http)}
        times: dict[str, list[float]] = {name: [] for name in paths}
        for n, query in enumerate(queries):
            for name, search in paths.items():
                start = time.perf_counter()
                await search(query)
                if n >= args.warmup:
                    times[name].append(1000 * (time.perf_counter() - start))
        return times


def _caller(session: Any, k: int) -> Callable[[str], Awaitable[None]]:
    async def search(query: str) -> None:
        result = await session.call_tool("search", {"query": query, "k": k})
        if getattr(result, "is_error", getattr(result, "isError", False)):
            raise RuntimeError(f"search through MCP failed: {result.content}")

    return search


def _pinger(session: Any) -> Callable[[str], Awaitable[None]]:
    async def ping(query: str) -> None:
        await session.send_ping()

    return ping


@asynccontextmanager
async def _session(db: str, http: bool, folder: Path) -> AsyncIterator[Any]:
    """A client session with a fresh `rmm mcp --user bench` (its log in `folder`)."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command = [sys.executable, "-m", "rmm_core.cli", "--db", db, "mcp", "--user", USER]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if not http:
        params = StdioServerParameters(command=command[0], args=command[1:], env=env)
        with open(folder / "stdio.log", "w") as log:
            async with stdio_client(params, errlog=log) as (read, write, *_), \
                    ClientSession(read, write) as s:
                await s.initialize()
                yield s
        return
    try:  # mcp 2 speaks httpx2, mcp 1 httpx
        import httpx2 as httpx
    except ImportError:
        import httpx
    from mcp.client.streamable_http import streamable_http_client

    token, port = secrets.token_urlsafe(24), _free_port()
    tokens = folder / "tokens.txt"
    tokens.write_text(f"{token}={USER}\n")
    with open(folder / "http.log", "w+") as log:
        server = subprocess.Popen([*command, "--http", "--port", str(port),
                                   "--tokens-file", str(tokens)], env=env, stderr=log,
                                  start_new_session=True)
        try:
            _wait_for(port, server, log)
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                         timeout=60) as client, \
                    streamable_http_client(f"http://127.0.0.1:{port}/mcp",
                                           http_client=client) as (read, write, *_), \
                    ClientSession(read, write) as s:
                await s.initialize()
                yield s
        finally:
            server.terminate()
            server.wait(timeout=30)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int, server: subprocess.Popen, log: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"rmm mcp --http exited: {log.read()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"rmm mcp --http did not listen on port {port} in {timeout:.0f} s")
