"""Which users a caller may act for: anyone's (stdio), one fixed by `--user`, or those a
bearer token is bound to (HTTP); and which Host and Origin an HTTP request may name. No SDK
import: the rules are plain and tested alone."""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError, RMMError
from ..hosts import Hosts, same_origin
from ..types import check_id


class AccessDenied(RMMError, PermissionError):
    """The caller asked for a user it may not act for; nothing was read or written."""


@dataclass(frozen=True)
class Access:
    """The users each caller may act for. `fixed_user` (from `--user`) narrows every caller
    to that user; `tokens` maps each bearer token to its users (HTTP only). `fixed_scope`
    (`--agent-id`, `--run-id`) holds the agent and run every call writes and searches as."""

    fixed_user: str | None = None
    tokens: Mapping[str, frozenset[str]] = field(default_factory=dict)
    fixed_scope: Mapping[str, str] = field(default_factory=dict)

    def scope(self, name: str, asked: str | None) -> str | None:
        """The `agent_id` or `run_id` a call acts as: the server's when it fixes one (a call
        asking for another is refused), else the call's own."""
        fixed = self.fixed_scope.get(name)
        if fixed is None or asked is None or asked == fixed:
            return fixed if fixed is not None else asked
        raise AccessDenied(f"this server serves {name} {fixed!r} only, not {asked!r}")

    def keeps_scope(self, metadata: Mapping[str, Any]) -> None:
        """Refuse (`AccessDenied`) metadata that would move a memory out of the server's
        agent or run: a fixed key given another value, or null, which would clear it."""
        for name, fixed in self.fixed_scope.items():
            if name not in metadata or metadata[name] == fixed:
                continue
            if metadata[name] is None:
                raise AccessDenied(f"this server serves {name} {fixed!r} only: metadata "
                                   f"cannot set {name} to null")
            raise AccessDenied(f"this server serves {name} {fixed!r} only, not "
                               f"{metadata[name]!r}")

    def user_for(self, asked: str | None, token: str | None = None) -> str:
        """The user a call acts for: the one it asked for if allowed, else the only one it
        may act for; `AccessDenied` or `InvalidInputError` otherwise."""
        allowed = self.allowed(token)
        if asked is None:
            if allowed is not None and len(allowed) == 1:
                return next(iter(allowed))
            choices = f" (one of: {', '.join(sorted(allowed))})" if allowed else ""
            raise InvalidInputError(f"user_id is required{choices}")
        user = check_id(asked, "user_id")
        if allowed is not None and user not in allowed:
            if self.fixed_user is not None and not self.tokens:
                raise AccessDenied(f"this server serves user {self.fixed_user!r} only, "
                                   f"not {user!r}")
            raise AccessDenied(f"this token may not act for user {user!r}")
        return user

    def allowed(self, token: str | None) -> frozenset[str] | None:
        """The users a caller may act for (None: any)."""
        users: frozenset[str] | None = None
        if self.tokens:
            users = self.users_of(token)
            if users is None:  # the HTTP layer refuses such a request before any tool runs
                raise AccessDenied("a valid bearer token is required")
        if self.fixed_user is not None:
            users = frozenset({self.fixed_user}) & users if users is not None \
                else frozenset({self.fixed_user})
        return users

    def users_of(self, token: str | None) -> frozenset[str] | None:
        """The users `token` is bound to, None for an unknown token."""
        number = self.token_number(token)
        return None if number is None else list(self.tokens.values())[number]

    def token_number(self, token: str | None) -> int | None:
        """Which of the tokens `token` is (from 0, in the order given), None for an unknown
        one; compared in constant time: a wrong guess takes as long whatever its prefix."""
        if token is None:
            return None
        found = None
        for number, known in enumerate(self.tokens):
            if hmac.compare_digest(known.encode(), token.encode()):
                found = number
        return found


def parse_tokens(specs: Iterable[str], files: Iterable[str | Path] = ()
                 ) -> dict[str, frozenset[str]]:
    """Tokens from `TOKEN=user1,user2` specs and files of such lines (blank lines and lines
    starting with `#` skipped); a token given twice gets the users of both."""
    lines: list[tuple[str, str]] = [(s, "--token") for s in specs]
    for path in files:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInputError(f"cannot read tokens file {path}: {exc.strerror or exc}"
                                    ) from exc
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"tokens file {path} is not UTF-8 text (byte "
                                    f"{exc.start})") from exc
        lines += [(line.strip(), f"{path} line {n}") for n, line in
                  enumerate(text.splitlines(), start=1)
                  if line.strip() and not line.lstrip().startswith("#")]
    tokens: dict[str, frozenset[str]] = {}
    for spec, where in lines:
        token, sep, users = spec.partition("=")
        token = token.strip()
        names = [u.strip() for u in users.split(",") if u.strip()]
        if not sep or not token or not names:
            raise InvalidInputError(f"{where}: give a token as TOKEN=user1,user2")
        if any(c.isspace() for c in token):
            raise InvalidInputError(f"{where}: a token has no spaces")
        tokens[token] = tokens.get(token, frozenset()) | {check_id(u, "user_id") for u in names}
    return tokens


class HostCheck:
    """ASGI middleware in front of the SDK's app: a malformed Host, or one not in `hosts`,
    gets 421 and an Origin (when sent) naming another host 403, before any token is read, so
    that a web page cannot reach the server through DNS rebinding."""

    def __init__(self, app: Any, hosts: Iterable[str]) -> None:
        self.app, self.hosts = app, Hosts(hosts)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            status = self.refusal(scope)
            if status is not None:
                await _plain(send, *status)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Any) -> tuple[int, str] | None:
        """(status, reason) for a request refused here, None to pass it on."""
        headers: dict[str, list[str]] = {}
        for key, value in scope.get("headers", []):
            headers.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
        hosts, origins = headers.get("host", []), headers.get("origin", [])
        scheme = scope.get("scheme", "http")
        if len(hosts) != 1 or not self.hosts.accepts(hosts[0], scheme):
            return 421, "this host name is not served here"
        if len(origins) > 1 or origins and not (
                same_origin(origins[0], hosts[0], scheme) or not self.hosts.any
                and self.hosts.accepts_origin(origins[0], any_port=True)):
            return 403, "requests from this origin are refused"
        return None


async def _plain(send: Any, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
    await send({"type": "http.response.body", "body": text.encode()})
