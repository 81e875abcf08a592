"""Build the MCP server over one `ReflectiveMemory` and run it on stdio or streamable HTTP
(bearer tokens checked by the SDK's own middleware before any tool runs)."""

from __future__ import annotations

import importlib.util
import logging
import sys
from typing import Any

from ..errors import InvalidInputError
from ..hosts import is_loopback, served_hosts
from ..memory import ReflectiveMemory
from .access import Access, HostCheck
from .sdk import SDK, load
from .tools import MAX_CALL_CHARS, register
from .transport import StrictBody, run_stdio, set_version

INSTRUCTIONS = (
    "Long-term memory of the user across conversations. Call `search` before answering "
    "anything that may depend on what the user said before; call `add` with a fact worth "
    "keeping (or the conversation's messages). Each hit names the turns it came from.")


class TokenVerifier:
    """The SDK's `TokenVerifier`: a token is valid when `Access` binds it to users, and each
    token is a principal of its own, so that an HTTP session serves only the token that
    opened it."""

    def __init__(self, access: Access) -> None:
        self.access = access

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        number = self.access.token_number(token)
        if number is None:
            return None
        # The SDK (mcp >= 1.27.2; earlier ones bind no session at all) serves a session only
        # to the principal that opened it: this AccessToken's client_id, issuer and subject,
        # not the token itself. With the same client_id and no subject for every token, any
        # valid token could use or end (DELETE) another's session; the token's number (not
        # its text) as subject keeps each session to its token.
        return AccessToken(token=token, client_id="rmm", scopes=[], subject=f"token-{number}")


class EndedSessionNoise(logging.Filter):
    """Drops the error mcp 1 logs, with a traceback, each time a client ends its HTTP session
    (DELETE): its standalone SSE writer reads the stream the session's end just closed.
    Nothing is lost; mcp 2 catches that error itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        import anyio

        error = record.exc_info[1] if record.exc_info else None
        return not (record.getMessage() == "Error in standalone SSE writer"
                    and isinstance(error, anyio.ClosedResourceError))


def check_bind(access: Access, *, http: bool, host: str) -> None:
    """Refuse to serve HTTP without a bearer token (`InvalidInputError`), on a non-loopback
    address above all: anyone who can reach it could read every user's memory."""
    if http and not access.tokens:
        where = "on this machine" if is_loopback(host) else \
            f"on {host}, a non-loopback address,"
        raise InvalidInputError(f"serving over HTTP {where} needs a bearer token: give "
                                "--token TOKEN=USER[,USER...] or --tokens-file FILE")


def build(memory: ReflectiveMemory, access: Access, *, http: bool = False,
          host: str = "127.0.0.1", port: int = 8765, allow_forget: bool = False,
          log_level: str = "WARNING", max_chars: int = MAX_CALL_CHARS) -> tuple[Any, SDK]:
    """The server with its tools. Over HTTP it needs tokens (`access.tokens`): a server
    reachable from the network without one is refused with `InvalidInputError`."""
    check_bind(access, http=http, host=host)
    sdk = load()
    options: dict[str, Any] = {"instructions": INSTRUCTIONS, "log_level": log_level}
    if http:
        from mcp.server.auth.settings import AuthSettings

        # the SDK's bearer middleware needs AuthSettings; tokens are ours, so no OAuth
        # server is advertised (no resource_server_url) and issuer_url is never served
        options["auth"] = AuthSettings(issuer_url="http://localhost",
                                       resource_server_url=None)
        options["token_verifier"] = TokenVerifier(access)
        if sdk.major == 1:  # mcp 2 takes these when it starts serving
            options.update(host=host, port=port, json_response=True)
            noise = logging.getLogger("mcp.server.streamable_http")
            if not any(isinstance(f, EndedSessionNoise) for f in noise.filters):
                noise.addFilter(EndedSessionNoise())
    server = sdk.server("reflective-memory", **options)
    set_version(server)
    register(server, sdk, memory, access, allow_forget=allow_forget, max_chars=max_chars)
    return server, sdk


async def serve(server: Any, sdk: SDK, *, http: bool = False, host: str = "127.0.0.1",
                port: int = 8765) -> None:
    """Serve until the client closes stdin (stdio) or the process is stopped (HTTP)."""
    if not http:
        await run_stdio(server)
        return
    import uvicorn

    # as the SDK's own runner, but with the access log off: uvicorn works out each
    # request's log fields even when the level drops the line (httptools parses when
    # installed, else h11)
    app = http_app(server, sdk, host=host, port=port)
    config = uvicorn.Config(app, host=host, port=port, access_log=False,
                            log_level=server.settings.log_level.lower())
    await uvicorn.Server(config).serve()


def http_app(server: Any, sdk: SDK, *, host: str = "127.0.0.1", port: int = 8765) -> Any:
    """The streamable HTTP app behind `HostCheck`: on a loopback address only that address
    and the loopback names with `port` are served (the SDK's own check knows fewer binds)."""
    app = server.streamable_http_app() if sdk.major == 1 else \
        server.streamable_http_app(json_response=True, host=host)
    return HostCheck(StrictBody(app), served_hosts(host, port))


def loop_options() -> dict[str, Any]:
    """`anyio.run`'s backend options: uvloop's event loop when installed (the `mcp` extra
    brings it; it cuts the loop's share of a call), else asyncio's own."""
    uvloop = sys.platform != "win32" and importlib.util.find_spec("uvloop") is not None
    return {"use_uvloop": uvloop}
