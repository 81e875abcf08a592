"""`rmm ui`: its arguments, and serving the inspector over the store until stopped.

Kept free of the web stack at import, so that `rmm --help` works without the `ui` extra."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from ..errors import InvalidInputError, MissingDependencyError, RMMError
from ..ops.exits import OK, USAGE, CommandError
from ..storage.base import Store

DEFAULT_PORT = 8766


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", default=None, metavar="TARGET",
                        help="SQLite file or postgresql:// URL (default: --db, $RMM_DB, "
                             "else the default file)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port to listen on (default {DEFAULT_PORT})")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; a non-loopback one "
                             "needs --token or --token-file)")
    parser.add_argument("--token", default=None,
                        help="required on every request (a ?token= link sets a cookie); "
                             "needed to listen on a non-loopback address")
    parser.add_argument("--token-file", default=None, metavar="FILE",
                        help="read the token from FILE, its one non-blank line (keeps it out "
                             "of `ps`)")
    parser.add_argument("--write", action="store_true",
                        help="allow feedback, updates and deletes from the page "
                             "(default: read-only)")
    parser.add_argument("--embedding-model", default=None, metavar="NAME_OR_PATH",
                        help="the model the memory is built with (default: the packaged "
                             "int8 MiniLM, as in MemoryConfig)")


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback address without a token (`InvalidInputError`): anyone who can
    reach it could read every user's memory."""
    from ..hosts import is_loopback

    if not is_loopback(host) and not token:
        raise InvalidInputError(f"serving on {host}, a non-loopback address, needs --token: "
                                "anyone who can reach it could read every user's memory")


def read_token(path: str | Path) -> str:
    """The token in a file: its one non-blank line, stripped (`InvalidInputError` for a
    missing, unreadable or empty file, or one holding more than a token)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise InvalidInputError(f"cannot read token file {path}: {reason}") from exc
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise InvalidInputError(f"token file {path} is empty: write the token on one line")
    if len(lines) > 1 or any(c.isspace() for c in lines[0]):
        raise InvalidInputError(f"token file {path} must hold one token on one line, "
                                "without spaces")
    return lines[0]


def token_of(args: argparse.Namespace) -> str | None:
    """The token from `--token` or `--token-file` (giving both is an `InvalidInputError`)."""
    if args.token_file is None:
        return args.token
    if args.token is not None:
        raise InvalidInputError("give --token or --token-file, not both")
    return read_token(args.token_file)


def load_stack() -> Any:
    """The web stack's modules; `MissingDependencyError` naming the extra when absent."""
    try:
        import jinja2
        import starlette
        import uvicorn
    except ImportError as exc:
        raise MissingDependencyError(exc.name or "starlette", "ui") from exc
    return starlette, uvicorn, jinja2


def run(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    """Serve until the process is stopped."""
    from ..config import MemoryConfig
    from ..memory import ReflectiveMemory

    try:
        token = token_of(args)
        check_bind(args.host, token)
        if not 0 <= args.port <= 65535:
            raise InvalidInputError(f"--port must be 0-65535, got {args.port}")
        _, uvicorn, _ = load_stack()
    except (MissingDependencyError, InvalidInputError) as exc:
        raise CommandError(str(exc), USAGE) from exc
    try:
        memory = ReflectiveMemory(store, config=MemoryConfig(
            embedding={"model": args.embedding_model}), recover=False)
    except (RMMError, OSError) as exc:
        raise CommandError(f"cannot load the embedding model: {exc}", USAGE) from exc
    from ..hosts import bind_name, served_hosts
    from .app import build_app

    app = build_app(memory, write=args.write, token=token,
                    hosts=served_hosts(args.host, args.port))
    link = f"http://{bind_name(args.host)}:{args.port}/"
    if token and args.token_file:  # a token kept out of `ps` is kept out of the terminal too
        link += f"?token=<the token in {args.token_file}>"
    elif token:
        link += f"?token={token}"
    mode = "write mode" if args.write else "read-only"
    print(f"rmm ui: serving {link} ({mode}); Ctrl-C stops it", file=sys.stderr, flush=True)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    finally:
        memory.close()
    return OK
