"""What reaches the SDK: each JSON-RPC message parsed strictly first (`ops.strict_json`: no
NaN or Infinity however spelt, which the SDK would turn into null, and no nesting deep enough
to overflow its parser), over stdio and HTTP alike; a refused message gets a JSON-RPC parse
error."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from io import TextIOWrapper
from typing import Any

from ..errors import InvalidInputError
from ..ops.strict_json import loads

MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""The largest JSON-RPC message read, as the SDK's own HTTP cap."""
PARSE_ERROR = -32700
_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")')


def check_message(raw: str | bytes) -> str | None:
    """Why a JSON-RPC message is refused before the SDK parses it, None when it is not."""
    if len(raw) > MAX_MESSAGE_BYTES:
        return f"Parse error: a message is limited to {MAX_MESSAGE_BYTES} bytes"
    try:
        loads(raw, "the message")
    except InvalidInputError as exc:
        return f"Parse error: {exc}"
    return None


def message_id(raw: str | bytes) -> Any:
    """The id of a refused request when it can be read (JSON-RPC: else null): parsed as
    Python's json reads it, else the first `"id":` of the text (a client writes it first)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        match = _ID.search(text[:10_000])
        return json.loads(match.group(1)) if match else None
    found = value.get("id") if isinstance(value, dict) else None
    return found if isinstance(found, (str, int)) and not isinstance(found, bool) else None


def error_body(raw: str | bytes, reason: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id(raw),
            "error": {"code": PARSE_ERROR, "message": reason}}


class StrictBody:
    """ASGI middleware: a POST body the strict parser refuses gets HTTP 400 with a JSON-RPC
    parse error, instead of the SDK's 500 (deep nesting) or a silent null (Infinity)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False) and size <= MAX_MESSAGE_BYTES
        body = b"".join(chunks)
        reason = check_message(body)
        if reason is not None:
            payload = json.dumps(error_body(body[:MAX_MESSAGE_BYTES], reason)).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": payload})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def run_stdio(server: Any) -> None:
    """Serve `server` on stdin/stdout through the SDK's own stdio transport, each line checked
    by `check_message` before the SDK reads it (a refused one is answered with a parse error
    and the server goes on). The SDK reads and writes the messages, so that each major version
    parses and prints them its own way: mcp 2's messages are no longer pydantic root models,
    and a copy of mcp 1's reader made every line a parse failure it drops without a word."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    from .sdk import jsonrpc_message

    lowlevel = getattr(server, "_mcp_server", None) or getattr(server, "_lowlevel_server", None)
    if lowlevel is None:  # an SDK laid out otherwise: its own transport, unchecked
        await server.run_stdio_async()
        return
    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8",
                                          errors="replace"))
    stdout = anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
    replies: list[Any] = []  # the SDK's write stream, once it exists
    ready = anyio.Event()

    async def checked() -> AsyncIterator[str]:
        async for line in stdin:
            reason = check_message(line)
            if reason is None:
                yield line
                continue
            body = error_body(line, reason)
            if body["id"] is None:  # JSON-RPC answers no error without an id
                print(f"rmm mcp: refused a message: {reason}", file=sys.stderr)
                continue
            await ready.wait()
            await replies[0].send(SessionMessage(jsonrpc_message(body)))

    async with stdio_server(stdin=checked(), stdout=stdout) as (read_stream, write_stream):
        replies.append(write_stream)
        ready.set()
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def set_version(server: Any) -> None:
    """Name this package's version in the server's `initialize` answer (the SDK would give
    its own, or none)."""
    from .. import __version__

    lowlevel = getattr(server, "_mcp_server", None) or getattr(server, "_lowlevel_server", None)
    if lowlevel is not None:
        lowlevel.version = __version__
