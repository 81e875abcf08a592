"""`rmm ui`: its arguments, and serving the inspector over the store until stopped.

Kept free of the web stack at import, so that `rmm --help` works without the `ui` extra."""

from __future__ import annotations

import argparse
import sys
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
                        help="address to listen on (default 127.0.0.1; any other needs --token)")
    parser.add_argument("--token", default=None,
                        help="required on every request (a ?token= link sets a cookie); "
                             "needed to listen on a non-loopback address")
    parser.add_argument("--write", action="store_true",
                        help="allow feedback, updates and deletes from the page "
                             "(default: read-only)")
    parser.add_argument("--embedding-model", default=None, metavar="NAME_OR_PATH",
                        help="the model the memory is built with (default: the packaged "
                             "int8 MiniLM, as in MemoryConfig)")


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback address without a token (`InvalidInputError`): anyone who can
    reach it could read every user's memory."""
    from ..mcp.server import is_loopback

    if not is_loopback(host) and not token:
        raise InvalidInputError(f"serving on {host}, a non-loopback address, needs --token: "
                                "anyone who can reach it could read every user's memory")


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
        check_bind(args.host, args.token)
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
    from .app import LOOPBACK_HOSTS, build_app

    hosts = LOOPBACK_HOSTS if args.host in LOOPBACK_HOSTS else ("*",)
    app = build_app(memory, write=args.write, token=args.token, hosts=hosts)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    link = f"http://{shown}:{args.port}/" + (f"?token={args.token}" if args.token else "")
    mode = "write mode" if args.write else "read-only"
    print(f"rmm ui: serving {link} ({mode}); Ctrl-C stops it", file=sys.stderr, flush=True)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    finally:
        memory.close()
    return OK
