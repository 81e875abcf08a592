"""`rmm users | inspect | search | reflect | export | import | forget | stats`: the
operators' commands.

Each command opens the store named by `--db` (default `$RMM_DB`, else the embedded default
file), does one thing and exits with a code scripts can rely on (`EXIT_CODES`). Only
`search` and `reflect` load the embedding model; the others read or write the store
directly. Only `reflect` reflects pending sessions, with the pipeline its options describe
(LLM-free unless `--llm-url` is given): give it the settings your application uses.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from ..errors import RMMError, StorageError
from ..storage import default_location, open_store
from ..storage.base import Store
from ..storage.redact import redact
from .exits import (
    BAD_DATA,
    EXIT_CODES,
    NO_DATABASE,
    NOT_REFLECTED,
    OK,
    REFUSED,
    UNKNOWN_USER,
    USAGE,
    CommandError,
)
from .handlers import HANDLERS
from .transfer import MAX_IMPORT_BYTES

__all__ = ["BAD_DATA", "COMMANDS", "EXIT_CODES", "NO_DATABASE", "NOT_REFLECTED", "OK", "REFUSED",
           "UNKNOWN_USER", "USAGE", "CommandError", "add_commands", "add_db_argument", "run"]

COMMANDS: dict[str, tuple[str, str]] = {
    "add": ("add conversations from a JSON or JSON Lines file as a user's sessions, "
            "reflected into memories now (one progress step a session), or one fact; what "
            "is stored already is skipped",
            "rmm add --user alice chats.jsonl\n"
            "  rmm add --user ana --text \"I like green tea\"   (one fact)\n"
            "  rmm add --user maya --sample     (the packaged five-session conversation)"),
    "users": ("every user with their sessions, turns and memories",
              "rmm users\n  rmm users --json"),
    "inspect": ("a user's memories with their source turns and version history",
                "rmm inspect --user alice --limit 10\n  rmm inspect --user alice --memory ID\n"
                "  rmm inspect --user alice --json | jq .text"),
    "search": ("search a user's memories: hits with scores and source turn ids",
               'rmm search --user alice "when did I adopt the dog?" --k 3\n'
               '  rmm search --user alice "where do I live?" --explain'),
    "reflect": ("reflect the sessions waiting for it (ended, or idle past "
                "sessions.idle_timeout) into memories",
                "rmm reflect                       (every user, LLM-free pipeline)\n"
                "  rmm reflect --user alice --open  (her open sessions too)\n"
                "  rmm reflect --set search.max_hit_words=200 --llm-url http://127.0.0.1:8080/v1"),
    "export": ("a user's sessions, turns and memories as JSON lines (with vectors)",
               "rmm export --user alice --out alice.jsonl"),
    "import": ("restore an export into a database, as is (no model, no LLM needed)",
               "rmm --db other.sqlite import alice.jsonl\n"
               "  rmm import alice.jsonl --user alice-copy"),
    "forget": ("delete everything a user has: turns, sessions, memories, versions",
               "rmm forget --user alice          (asks you to type the user id)\n"
               "  rmm forget --user alice --yes    (for scripts)"),
    "mcp": ("serve the memory to agents over the Model Context Protocol (stdio, or "
            "streamable HTTP with bearer tokens); needs the `mcp` extra",
            "rmm mcp --user alice               (stdio, for Claude Desktop, Cursor, VS Code)\n"
            "  rmm mcp --http --port 8765 --tokens-file tokens.txt"),
    "ui": ("a local inspector page: users, memories with provenance and versions, search "
           "explained, what the reranker learned; needs the `ui` extra",
           "rmm ui                              (http://127.0.0.1:8766/, read-only)\n"
           "  rmm ui alice.sqlite --write        (feedback, updates, deletes allowed)"),
    "stats": ("how many users, sessions, turns and memories; sessions waiting for reflection "
              "or failed; LLM calls and tokens",
              "rmm stats\n  rmm stats --user alice --json"),
}
"""Command name -> (one-line help, example)."""


def add_db_argument(parser: argparse.ArgumentParser, *, default: Any = None) -> None:
    """`--db`, accepted before the command (`rmm --db X stats`) and after it."""
    parser.add_argument("--db", default=default, metavar="PATH_OR_URL",
                        help="SQLite file or postgresql:// URL (default: $RMM_DB, else "
                             f"{default_location()})")


def add_commands(commands: Any) -> None:
    """Add the operator commands to the `rmm` subparsers."""
    db = argparse.ArgumentParser(add_help=False)
    add_db_argument(db, default=argparse.SUPPRESS)  # keep a --db given before the command
    for name, (help_text, example) in COMMANDS.items():
        sub = commands.add_parser(name, parents=[db], help=help_text, description=help_text,
                                  epilog=f"example:\n  {example}\n\n{EXIT_CODES}",
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        sub.set_defaults(_command=name)
        if name in ("add", "inspect", "search", "export", "forget"):
            sub.add_argument("--user", required=True, help="the user id")
        if name in ("inspect", "stats", "search", "users"):
            sub.add_argument("--json", action="store_true", help="JSON lines for machines")
        if name in ("stats", "reflect"):
            sub.add_argument("--user", default=None, help="only this user")
        if name == "inspect":
            sub.add_argument("--limit", type=int, default=None, metavar="N",
                             help="show the first N memories only")
            sub.add_argument("--memory", default=None, metavar="ID", help="show this memory only")
        if name == "reflect":
            sub.add_argument("--open", action="store_true",
                             help="reflect open sessions too, however recent their last turn")
            sub.add_argument("--retry-failed", action="store_true",
                             help="retry sessions that failed sessions.reflection_max_attempts "
                                  "times")
            sub.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                             help="MemoryConfig setting of your application, by dotted "
                                  "name, e.g. search.max_hit_words=200 (repeatable)")
            sub.add_argument("--llm-url", default=None, metavar="URL",
                             help="OpenAI-compatible API root for the LLM stages (key: "
                                  "$OPENAI_API_KEY); default: the LLM-free pipeline")
            sub.add_argument("--llm-model", default="default", help="model sent to --llm-url")
        if name == "add":
            source = sub.add_mutually_exclusive_group(required=True)
            source.add_argument("file", nargs="?", help="sessions or messages (JSON, JSONL)")
            source.add_argument("--sample", action="store_true",
                                help="the sample conversation that ships with the package")
            source.add_argument("--text", default=None, metavar="FACT",
                                help="one fact to remember as it is, e.g. --text \"I like "
                                     "green tea\" (stored and searchable at once)")
            sub.add_argument("--occurred-at", default=None, metavar="DATE",
                             help="with --text: when it was said, ISO 8601 (default now)")
        if name in ("add", "search"):
            sub.add_argument("--embedding-model", default=None, metavar="NAME_OR_PATH",
                             help="the model the memory is built with (default: the "
                                  "packaged int8 MiniLM, as in MemoryConfig)")
        if name == "search":
            sub.add_argument("query", help="what to look for")
            sub.add_argument("--k", type=int, default=5, help="hits to show (default 5)")
            sub.add_argument("--explain", action="store_true",
                             help="every candidate's signals (BM25, dense, best turn, "
                                  "reranker features), the final order and the budget cut")
            sub.add_argument("--budget", type=int, default=1000, metavar="WORDS",
                             help="words of context the --explain cut is shown for "
                                  "(default 1000)")
        if name == "export":
            sub.add_argument("--out", default="-", help="file to write (default: stdout)")
        if name == "import":
            sub.add_argument("file", nargs="?", default="-", help="export file (- = stdin)")
            sub.add_argument("--max-bytes", type=int, default=MAX_IMPORT_BYTES, metavar="N",
                             help="refuse a file larger than this (default "
                                  f"{MAX_IMPORT_BYTES:,}: 256 MiB)")
            sub.add_argument("--user", default=None,
                             help="import as this user id (default: the exported one)")
        if name == "mcp":
            from ..mcp.command import add_arguments

            add_arguments(sub)
        if name == "ui":
            from ..ui.command import add_arguments as ui_arguments

            ui_arguments(sub)
        if name == "forget":
            sub.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one operator command; print a one-line message (no traceback) on failure."""
    out = out or sys.stdout
    try:
        target = getattr(args, "target", None) or getattr(args, "db", None) \
            or default_location()
        store = _open(target, create=args._command in ("add", "import", "mcp"))
        try:
            return HANDLERS[args._command](store, args, out)
        except StorageError as exc:  # the database failed mid-command (lost, locked, corrupt)
            raise CommandError(str(exc), NO_DATABASE) from exc
        finally:
            store.close()
    except CommandError as exc:
        print(f"rmm {args._command}: {' '.join(str(exc).split())}", file=sys.stderr)
        return exc.code
    except BrokenPipeError:  # `rmm inspect ... | head`: the reader has what it wanted
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python's documented recipe
        return OK


def _open(target: str, *, create: bool) -> Store:
    path = target[len("sqlite:///"):] if target.startswith("sqlite:///") else target
    local = "://" not in path and path not in ("", ":memory:")
    if local and not create and not Path(path).expanduser().is_file():
        raise CommandError(f"no database at {target} (set --db or RMM_DB)", NO_DATABASE)
    try:
        if local and create:
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        return open_store(target)
    except (RMMError, OSError) as exc:
        shown, message = redact(target, target), redact(str(exc), target)
        if shown not in message:  # the stores' own messages already name the (redacted) target
            message = f"cannot open {shown}: {message}"
        raise CommandError(message, NO_DATABASE) from exc
