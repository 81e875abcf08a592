"""The memory as an MCP server, offline: start `rmm mcp` as Claude Desktop, Cursor or an agent
framework would, and call its tools with the MCP SDK's own client (mcp 1 or 2).

Over stdio (the host starts the server and talks to it on stdin/stdout), or with `--http`
over streamable HTTP, as a server shared by several clients runs: a bearer token bound to
the user, given in a tokens file.

Run: python cookbook/mcp_client.py [--http]   (needs only `pip install "reflective-memory[mcp]"`)
"""

import argparse
import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

try:  # the HTTP client the installed SDK speaks: httpx2 for mcp 2, httpx for mcp 1
    import httpx2 as httpx
except ImportError:
    import httpx

ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


def rmm_mcp(db: Path, *args: str) -> list[str]:
    """`rmm --db DB mcp ARGS`, run with this Python so that no PATH lookup is needed."""
    return [sys.executable, "-m", "rmm_core.cli", "--db", str(db), "mcp", *args]


async def use_memory(session: ClientSession) -> None:
    """What an agent does with the memory: add a fact and a conversation, then search."""
    await session.initialize()
    tools = await session.list_tools()
    print("tools:", ", ".join(t.name for t in tools.tools))

    async def call(tool: str, **arguments) -> dict:
        result = await session.call_tool(tool, arguments)
        return json.loads(result.content[0].text)

    fact = await call("add", content="My cat Pixel is scared of the vacuum cleaner.")
    print("added a fact:", fact["added"][0]["text"])
    chat = await call("add", content=[
        {"role": "user", "content": "I'm training for the Lisbon half marathon in May."},
        {"role": "assistant", "content": "Great goal! How many runs a week?"},
        {"role": "user", "content": "Three: two easy runs and a long one on Sundays."}])
    print(f"added a conversation, reflected now: {chat['added'][0]['text']!r:.60} "
          f"from turns {', '.join(chat['added'][0]['refs'])}")
    for question in ("What is my cat afraid of?", "Which race am I training for?"):
        hits = (await call("search", query=question, k=2))["hits"]
        print(f"\nQ: {question}")
        for hit in hits:
            print(f"  [{hit['score']:.2f}] {' '.join(hit['text'].split())[:100]}")
    refused = await session.call_tool("search", {"query": "cat", "user_id": "someone"})
    print("\nanother user:", refused.content[0].text)


async def over_stdio(db: Path) -> None:
    """`rmm mcp --user maya` over stdio: the client starts it and it serves maya alone."""
    server = StdioServerParameters(command=sys.executable,
                                   args=rmm_mcp(db, "--user", "maya")[1:], env=ENV)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await use_memory(session)


async def over_http(db: Path) -> None:
    """`rmm mcp --http` on a free local port, with a token that may act for maya only."""
    token = secrets.token_urlsafe(32)
    tokens = db.parent / "tokens.txt"  # a file keeps the token out of `ps`
    tokens.write_text(f"{token}=maya\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(rmm_mcp(db, "--http", "--port", str(port),
                                      "--tokens-file", str(tokens)), env=ENV)
    try:
        await listening(port, server)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(headers=headers, timeout=60) as client, \
                streamable_http_client(f"http://127.0.0.1:{port}/mcp",
                                       http_client=client) as streams, \
                ClientSession(streams[0], streams[1]) as session:
            await use_memory(session)
    finally:
        server.terminate()
        server.wait(timeout=30)


async def listening(port: int, server: subprocess.Popen, seconds: float = 120) -> None:
    """Wait until the server accepts connections (it loads the embedding model first)."""
    for _ in range(int(seconds * 10)):
        if server.poll() is not None:
            sys.exit(f"rmm mcp --http exited with status {server.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        return
    sys.exit(f"rmm mcp --http is not listening on port {port} after {seconds:.0f} s")


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--http", action="store_true",
                    help="serve over streamable HTTP with a bearer token instead of stdio")
args = parser.parse_args()
with tempfile.TemporaryDirectory() as folder:
    asyncio.run((over_http if args.http else over_stdio)(Path(folder) / "memory.sqlite"))
