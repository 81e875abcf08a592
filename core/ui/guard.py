"""The inspector's outer layer: security headers on every response; the Host header checked
(no DNS rebinding) and the Origin of every write; and, when the page was started with a
token, that token required on every request."""

from __future__ import annotations

import secrets
from typing import Any

from ..hosts import Hosts, same_origin

COOKIE = "rmm_ui_token"

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
"""No script runs, nothing loads from elsewhere, no other site frames the page."""

HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"same-origin"), (b"cache-control", b"no-store")]
"""`same-origin`, not `no-referrer`: under `no-referrer` a browser sends `Origin: null` with
the page's own forms, which the Origin check would refuse."""

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def bearer(header: str) -> str:
    """The token of an `Authorization: Bearer <token>` header ("" for any other form)."""
    scheme, _, token = header.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class Guard:
    """ASGI middleware: the headers above; a request whose Host is malformed or not in
    `hosts` refused ("*" accepts any well-formed one); a write (any method but GET, HEAD,
    OPTIONS) whose Origin is not this very server refused; and the token check
    (`Authorization: Bearer`, the cookie, or a `?token=` link, which sets the cookie and
    redirects to the bare address)."""

    def __init__(self, app: Any, token: str | None = None,
                 hosts: tuple[str, ...] = ("*",)) -> None:
        self.app, self.token, self.hosts = app, token, Hosts(hosts)

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
        hosts, scheme = request.headers.getlist("host"), scope.get("scheme", "http")
        host = hosts[0] if len(hosts) == 1 else ""  # none, or two that may disagree
        if not self.hosts.accepts(host, scheme):
            return PlainTextResponse("this host name is not served here", status_code=400)
        origin = request.headers.get("origin")
        if request.method not in SAFE_METHODS and origin is not None and \
                not same_origin(origin, host, scheme):
            return PlainTextResponse("a write must come from this page itself",
                                     status_code=403)
        if not self.token:
            return None
        given = request.query_params.get("token") or request.cookies.get(COOKIE) or \
            bearer(request.headers.get("authorization", ""))
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            return PlainTextResponse("a token is required: open the link `rmm ui` printed",
                                     status_code=401)
        if "token" in request.query_params:  # out of the address bar and the history
            response = RedirectResponse(request.url.remove_query_params("token"),
                                        status_code=303)
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
            return response
        return None
