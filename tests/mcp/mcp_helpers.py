"""Talking to a real `rmm mcp` subprocess through the SDK's own clients (mcp 1 or 2)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def rmm(db: Path | str, *args: str) -> list[str]:
    """The `rmm mcp` command line on `db`."""
    return [sys.executable, "-m", "rmm_core.cli", "--db", str(db), "mcp", *args]


@asynccontextmanager
async def stdio_session(db: Path | str, *args: str, pid_file: Path | None = None
                        ) -> AsyncIterator[ClientSession]:
    """A session with a fresh `rmm mcp` over stdio; `pid_file` receives its process id."""
    command = rmm(db, *args)
    if pid_file is not None:  # `exec` keeps the process id the shell wrote
        command = ["sh", "-c", f'echo $$ > "{pid_file}"; exec "$@"', "sh", *command]
    params = StdioServerParameters(command=command[0], args=command[1:], env=ENV)
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as s:
        await s.initialize()
        yield s


@asynccontextmanager
async def http_session(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    """A session over streamable HTTP, sending `token` as its bearer token."""
    try:  # mcp 2 speaks httpx2, mcp 1 httpx
        import httpx2 as httpx
        from mcp.client.streamable_http import streamable_http_client
    except ImportError:
        import httpx
        from mcp.client.streamable_http import streamable_http_client
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=60) as client, \
            streamable_http_client(url, http_client=client) as streams, \
            ClientSession(streams[0], streams[1]) as s:
        await s.initialize()
        yield s


def is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None) is not None)


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    """A tool's JSON answer; fails the test on a tool error."""
    result = await session.call_tool(tool, arguments)
    assert not is_error(result), text_of(result)
    return json.loads(text_of(result))


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A tool error's message; fails the test when the call succeeds."""
    result = await session.call_tool(tool, arguments)
    assert is_error(result), f"{tool}({arguments}) succeeded: {text_of(result)[:300]}"
    return text_of(result)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    """`rmm mcp --http` in a subprocess, ready when its port accepts connections."""

    def __init__(self, db: Path | str, *args: str, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = tempfile.TemporaryFile("w+")  # a pipe nobody reads could fill up
        self.process = subprocess.Popen(rmm(db, "--http", "--port", str(self.port), *args),
                                        env=ENV, stderr=self.log, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"rmm mcp exited: {self.stderr()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("rmm mcp --http did not start listening in 120 s")

    def stderr(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, as in a crash."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()
