"""The inspector's outer layer: security headers on every response and, when the page was
started with a token, that token required on every request."""

from __future__ import annotations

import secrets
from typing import Any

COOKIE = "rmm_ui_token"

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
"""No script runs, nothing loads from elsewhere, no other site frames the page."""

HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"no-referrer"), (b"cache-control", b"no-store")]


def host_name(header: str) -> str:
    """The name of a Host header without its port (`[::1]:8766` -> `[::1]`)."""
    if header.startswith("["):
        return header[:header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard:
    """ASGI middleware: the headers above; requests for a host name not in `hosts` refused
    (a web page cannot reach the inspector through DNS rebinding; "*" accepts any); and the
    token check (`Authorization: Bearer`, the cookie, or a `?token=` link, which sets the
    cookie and redirects to the bare address)."""

    def __init__(self, app: Any, token: str | None = None,
                 hosts: tuple[str, ...] = ("*",)) -> None:
        self.app, self.token, self.hosts = app, token, hosts

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        refused = self._refused(scope)
        if refused is None:
            await self.app(scope, receive, with_headers)
        else:
            await refused(scope, receive, with_headers)

    def _refused(self, scope: Any) -> Any:
        """The response that stops this request (None: let it through)."""
        from starlette.requests import Request
        from starlette.responses import PlainTextResponse, RedirectResponse

        request = Request(scope)
        if "*" not in self.hosts and host_name(request.headers.get("host", "")) \
                not in self.hosts:
            return PlainTextResponse("this host name is not served here", status_code=400)
        if not self.token:
            return None
        given = request.query_params.get("token") or request.cookies.get(COOKIE) or \
            request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            return PlainTextResponse("a token is required: open the link `rmm ui` printed",
                                     status_code=401)
        if "token" in request.query_params:  # out of the address bar and the history
            response = RedirectResponse(request.url.remove_query_params("token"),
                                        status_code=303)
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
            return response
        return None
