"""Host and Origin headers read strictly, and the names a local server answers to: the guard
against DNS rebinding that `rmm ui` and `rmm mcp --http` share. No web framework import."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from .errors import InvalidInputError

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""The names a browser on this machine reaches a loopback server by."""
DEFAULT_PORTS = {"http": 80, "https": 443}
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_PORT = re.compile(r"[0-9]{1,5}")


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost may resolve anywhere
        return False


def parse_host(text: str) -> tuple[str, int | None] | None:
    """`name[:port]` as (name, port): the name lower-cased, an IPv6 address bracketed and
    compressed; None for anything else (userinfo `@`, unbracketed IPv6, bad port, junk)."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or "%" in text:
            return None
        try:
            name = f"[{ipaddress.IPv6Address(text[1:end]).compressed}]"
        except ValueError:
            return None
        rest = text[end + 1:]
    else:
        name, _, _ = text.partition(":")
        rest, name = text[len(name):], name.lower()
        if not _NAME.fullmatch(name):
            return None
        if name.replace(".", "").isdigit():  # all digits: an IPv4 address or nothing
            try:
                ipaddress.IPv4Address(name)
            except ValueError:
                return None
    if not rest:
        return name, None
    port = rest[1:]
    if rest[0] != ":" or not _PORT.fullmatch(port) or not 0 < int(port) <= 65535:
        return None
    return name, int(port)


def bind_name(bind: str) -> str:
    """The Host-header spelling of a listening address (`0:0:0:0:0:0:0:1` -> `[::1]`)."""
    try:
        address = ipaddress.ip_address(bind.strip("[]"))
    except ValueError:
        return bind.lower()
    return f"[{address.compressed}]" if address.version == 6 else str(address)


def served_hosts(bind: str, port: int) -> tuple[str, ...]:
    """The Host values a server on `bind`:`port` answers to. On a loopback address: that
    address and the loopback names, with that port (any when 0); elsewhere any ("*")."""
    if not is_loopback(bind):
        return ("*",)
    names = dict.fromkeys([bind_name(bind), *LOOPBACK_NAMES])
    return tuple(f"{name}:{port}" if port else name for name in names)


class Hosts:
    """Host values accepted: `name` (any port) or `name:port` specs, "*" for any well-formed
    one; a malformed spec raises `InvalidInputError`."""

    def __init__(self, specs: Iterable[str]) -> None:
        self.any = False
        self.allowed: set[tuple[str, int | None]] = set()
        for spec in specs:
            parsed = None if spec == "*" else parse_host(spec)
            if spec != "*" and parsed is None:
                raise InvalidInputError(f"not a host name or name:port: {spec!r}")
            self.any = self.any or spec == "*"
            if parsed is not None:
                self.allowed.add(parsed)

    def accepts(self, header: str | None, scheme: str = "http", *,
                any_port: bool = False) -> bool:
        """Whether a Host header (`name[:port]`, the port the scheme's default if absent)
        is served here; `any_port` compares names only."""
        parsed = parse_host(header or "")
        if parsed is None:
            return False
        if self.any:
            return True
        name, port = parsed
        if any_port:
            return any(name == allowed for allowed, _ in self.allowed)
        port = DEFAULT_PORTS.get(scheme) if port is None else port
        return (name, None) in self.allowed or (name, port) in self.allowed

    def accepts_origin(self, origin: str, *, any_port: bool = False) -> bool:
        """Whether an Origin header (`scheme://name[:port]`) names a host served here; a
        sandboxed or privacy-stripped page sends `null`, which is refused."""
        scheme, sep, rest = origin.partition("://")
        scheme = scheme.lower()
        return bool(sep) and scheme in DEFAULT_PORTS and \
            self.accepts(rest, scheme, any_port=any_port)


def same_origin(origin: str, host: str, scheme: str = "http") -> bool:
    """Whether an Origin header names the very server the request's Host header does (the
    same scheme, name and port): a form posted from any other page does not."""
    their_scheme, sep, rest = origin.partition("://")
    theirs, ours = parse_host(rest), parse_host(host)
    if not sep or their_scheme.lower() != scheme or theirs is None or ours is None:
        return False
    default = DEFAULT_PORTS.get(scheme)
    return (theirs[0], theirs[1] or default) == (ours[0], ours[1] or default)
