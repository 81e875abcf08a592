"""Passwords out of database URLs and driver messages, before either is shown or logged.

libpq echoes a malformed conninfo token verbatim (a password with a bad %-escape or a
space), so besides the URL's own `user:password@` and `password=` parts, every password
the URL holds is blanked wherever it appears in the text.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, unquote_plus

_MASK = "***"
_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/?#@]*):[^\s@]*@")
_KEY_VALUE = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&#]+)", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"^[^:/?#]+://[^:@/?#]*:([^@]*)@")
_QUERY_PASSWORD = re.compile(r"[?&]password=([^&#]*)", re.IGNORECASE)


def url_secrets(url: str) -> set[str]:
    """Every password a URL holds (user info and `password=` query values), as written and
    decoded; read with patterns, not a URL parser, so that a malformed URL is covered too."""
    found = _URL_PASSWORD.findall(url) + _QUERY_PASSWORD.findall(url)
    return {form for raw in found for form in (raw, unquote(raw), unquote_plus(raw)) if form}


def redact(text: str, url: str | None = None) -> str:
    """`text` with the passwords of `url` and any `user:password@` or `password=value` blanked."""
    for secret in sorted(url_secrets(url) if url else (), key=len, reverse=True):
        text = text.replace(secret, _MASK)
    text = _USERINFO.sub(rf"\1:{_MASK}@", text)
    return _KEY_VALUE.sub(rf"\g<1>{_MASK}", text)
