"""`rmm mcp`: its arguments, and serving the store named by `--db` until stopped.

Kept free of the SDK at import, so that `rmm --help` works without the `mcp` extra."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from ..errors import InvalidInputError, MissingDependencyError, RMMError
from ..ops.exits import OK, USAGE, CommandError
from ..storage.base import Store
from .tools import FORGET_SCOPED, MAX_CALL_CHARS

DEFAULT_PORT = 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", default=None,
                        help="serve this user only (a call naming another is refused)")
    parser.add_argument("--agent-id", default=None,
                        help="write and search as this agent only (metadata agent_id)")
    parser.add_argument("--run-id", default=None,
                        help="write and search as this run only (metadata run_id)")
    parser.add_argument("--allow-forget", action="store_true",
                        help="offer the `forget` tool, which erases a user's whole memory")
    parser.add_argument("--http", action="store_true",
                        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on with --http (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port to listen on with --http (default {DEFAULT_PORT})")
    parser.add_argument("--token", action="append", default=[], metavar="TOKEN=USER[,USER]",
                        help="a bearer token and the users it may act for (repeatable; "
                             "required with --http)")
    parser.add_argument("--tokens-file", action="append", default=[], metavar="FILE",
                        help="a file of TOKEN=USER[,USER] lines (keeps tokens out of `ps`)")
    parser.add_argument("--max-call-chars", type=int, default=MAX_CALL_CHARS, metavar="N",
                        help="the most characters of text one add or update may write "
                             f"(default {MAX_CALL_CHARS:,}: a few seconds of work a call)")
    parser.add_argument("--embedding-model", default=None, metavar="NAME_OR_PATH",
                        help="the model the memory is built with (default: the packaged "
                             "int8 MiniLM, as in MemoryConfig)")


def run(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    """Serve until the client hangs up (stdio) or the process is stopped (HTTP)."""
    import anyio

    from ..config import MemoryConfig
    from ..memory import ReflectiveMemory
    from ..types import check_id
    from .access import Access, parse_tokens
    from .server import build, check_bind, loop_options, serve

    try:
        scope = {name: check_id(value, f"--{name.replace('_', '-')}")
                 for name, value in (("agent_id", args.agent_id), ("run_id", args.run_id))
                 if value is not None}
        access = Access(check_id(args.user, "--user", optional=True),
                        parse_tokens(args.token, args.tokens_file) if args.http else {}, scope)
        if not args.http and (args.token or args.tokens_file):
            raise InvalidInputError("--token and --tokens-file are for --http; a stdio "
                                    "server answers only the process that started it")
        check_bind(access, http=args.http, host=args.host)
        if not 0 <= args.port <= 65535:
            raise InvalidInputError(f"--port must be 0-65535, got {args.port}")
        if args.allow_forget and scope:
            raise InvalidInputError(FORGET_SCOPED)
        if args.max_call_chars < 1:
            raise InvalidInputError(f"--max-call-chars must be at least 1, got "
                                    f"{args.max_call_chars}")
        from .sdk import load

        load()  # fail on a missing extra before loading the model
    except (MissingDependencyError, InvalidInputError) as exc:
        raise CommandError(str(exc), USAGE) from exc
    config = MemoryConfig(embedding={"model": args.embedding_model},
                          sessions={"background_reflection": True})
    try:
        memory = ReflectiveMemory(store, config=config)
    except (RMMError, OSError) as exc:
        raise CommandError(f"cannot load the embedding model: {exc}", USAGE) from exc
    try:
        server, sdk = build(memory, access, http=args.http, host=args.host, port=args.port,
                            allow_forget=args.allow_forget, max_chars=args.max_call_chars)
        where = f"http://{args.host}:{args.port}/mcp" if args.http else "stdio"
        print(f"rmm mcp: serving on {where}", file=sys.stderr, flush=True)
        try:
            anyio.run(lambda: serve(server, sdk, http=args.http, host=args.host,
                                    port=args.port), backend_options=loop_options())
        except KeyboardInterrupt:
            pass
    finally:
        memory.close()
    return OK
