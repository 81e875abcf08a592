"""`rmm inspect | search | export | import | forget | stats`: the operators' commands.

Each command opens the store named by `--db` (default `$RMM_DB`, else the embedded default
file), does one thing and exits with a code scripts can rely on (`EXIT_CODES`). Only
`search` loads the embedding model; the others read or write the store directly. No command
reflects pending sessions: that needs the application's pipeline (its LLM and settings).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from .errors import InvalidInputError, RMMError, StorageError
from .storage import default_location, open_store
from .storage.base import Store
from .storage.redact import redact
from .transfer import export_records, import_records
from .types import Memory

OK, REFUSED, USAGE, NO_DATABASE, UNKNOWN_USER, BAD_DATA = 0, 1, 2, 3, 4, 5
EXIT_CODES = """exit codes:
  0  done
  1  refused or aborted (forget not confirmed)
  2  usage error (bad or missing arguments)
  3  database missing, unreadable or unreachable, or a bad URL
  4  unknown user
  5  bad import data"""


class CommandError(Exception):
    """A failure with the message to print and the exit code to return."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


COMMANDS: dict[str, tuple[str, str]] = {
    "inspect": ("a user's memories with their source turns and version history",
                "rmm inspect --user alice\n  rmm inspect --user alice --json | jq .text"),
    "search": ("search a user's memories: hits with scores and source turn ids",
               'rmm search --user alice "when did I adopt the dog?" --k 3'),
    "export": ("a user's sessions, turns and memories as JSON lines (with vectors)",
               "rmm export --user alice --out alice.jsonl"),
    "import": ("restore an export into a database, as is (no model, no LLM needed)",
               "rmm --db other.sqlite import alice.jsonl\n"
               "  rmm import alice.jsonl --user alice-copy"),
    "forget": ("delete everything a user has: turns, sessions, memories, versions",
               "rmm forget --user alice          (asks you to type the user id)\n"
               "  rmm forget --user alice --yes    (for scripts)"),
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
        if name in ("inspect", "search", "export", "forget"):
            sub.add_argument("--user", required=True, help="the user id")
        if name in ("inspect", "stats", "search"):
            sub.add_argument("--json", action="store_true", help="JSON lines for machines")
        if name == "stats":
            sub.add_argument("--user", default=None, help="only this user")
        if name == "search":
            sub.add_argument("query", help="what to look for")
            sub.add_argument("--k", type=int, default=5, help="hits to show (default 5)")
            sub.add_argument("--embedding-model", default=None, metavar="NAME_OR_PATH",
                             help="the model the memory was built with (default: the "
                                  "packaged int8 MiniLM, as in MemoryConfig)")
        if name == "export":
            sub.add_argument("--out", default="-", help="file to write (default: stdout)")
        if name == "import":
            sub.add_argument("file", nargs="?", default="-", help="export file (- = stdin)")
            sub.add_argument("--user", default=None,
                             help="import as this user id (default: the exported one)")
        if name == "forget":
            sub.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one operator command; print a one-line message (no traceback) on failure."""
    out = out or sys.stdout
    try:
        target = getattr(args, "db", None) or default_location()
        store = _open(target, create=args._command == "import")
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


def _known(store: Store, user_id: str) -> str:
    if user_id not in store.users():
        raise CommandError(f"unknown user {user_id!r} in this database", UNKNOWN_USER)
    return user_id


def _inspect(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    user = _known(store, args.user)
    turns = {t.id: t for t in store.turns(user)}
    memories = store.memories(user)
    for n, m in enumerate(memories, start=1):
        if args.json:
            out.write(json.dumps({
                "id": m.id, "text": m.text, "key": m.key, "refs": m.refs,
                "source_turns": [{"id": r, "speaker": turns[r].speaker, "text": turns[r].text}
                                 for r in m.refs if r in turns],
                "versions": [{"version": v.version, "reason": v.reason, "at": _iso(v.at),
                              "text": v.text, "refs": list(v.refs)} for v in m.versions],
                "attrs": m.attrs}) + "\n")
            continue
        out.write(f"[{n}] {m.id}  v{len(m.versions)}  updated {_iso(m.updated_at)}\n")
        out.write(f"    text: {_short(m.text, 300)}\n    key:  {_short(m.key, 200)}\n")
        out.write("    from turns:\n")
        for ref in m.refs:
            turn = turns.get(ref)
            line = f"{turn.speaker}: {_short(turn.text, 120)}" if turn else "(not in the log)"
            out.write(f"      {ref}  {line}\n")
        out.write("    versions:\n")
        for v in m.versions:
            out.write(f"      v{v.version} {v.reason} {_iso(v.at)}: {_short(v.text, 120)}\n")
    if not args.json:
        out.write(f"{len(memories)} memories of {user}\n")
    return OK


def _reader(store: Store, embedding_model: str | None) -> Any:
    """A memory that searches without reflecting pending sessions (the constructor's crash
    recovery): the default LLM-free pipeline would write memories the application's would not.
    Built here, not at import, so that `rmm --help` and the other commands load no model."""
    from .config import MemoryConfig
    from .memory import ReflectiveMemory

    class Reader(ReflectiveMemory):
        def reflect_pending(self, *, all_open: bool = False) -> list[Memory]:
            return []

    return Reader(store, config=MemoryConfig(embedding_model=embedding_model))


def _search(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    user = _known(store, args.user)
    if args.k < 1:
        raise CommandError("--k must be at least 1", USAGE)
    try:
        mem = _reader(store, args.embedding_model)
    except (RMMError, OSError) as exc:
        raise CommandError(f"cannot load the embedding model: {exc}", USAGE) from exc
    try:
        result = mem.search(args.query, user_id=user, k=args.k)
    except InvalidInputError as exc:
        raise CommandError(str(exc), USAGE) from exc
    for hit in result:
        if args.json:
            out.write(json.dumps({"rank": hit.rank, "score": hit.score, "id": hit.memory.id,
                                  "refs": hit.refs, "text": hit.text}) + "\n")
        else:
            out.write(f"{hit.rank + 1}. score {hit.score:.3f}  {hit.memory.id}  "
                      f"refs {', '.join(hit.refs)}\n   {_short(hit.text, 300)}\n")
    if not result.hits and not args.json:
        out.write("no hits\n")
    return OK


def _export(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    user = _known(store, args.user)
    lines = (json.dumps(r, ensure_ascii=False) + "\n" for r in export_records(store, user))
    if args.out == "-":
        out.writelines(lines)
    else:
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                f.writelines(lines)
        except OSError as exc:  # folder missing or not writable, disk full
            raise CommandError(f"cannot write {args.out}: {exc.strerror or exc}", USAGE) from exc
        print(f"exported {user} to {args.out}", file=sys.stderr)
    return OK


def _import(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    try:
        if args.file == "-":
            summary = import_records(store, _records(sys.stdin), user_id=args.user)
        else:
            with open(args.file, encoding="utf-8") as f:
                summary = import_records(store, _records(f), user_id=args.user)
    except OSError as exc:
        raise CommandError(f"cannot read {args.file}: {exc}", BAD_DATA) from exc
    except (InvalidInputError, StorageError) as exc:
        raise CommandError(f"nothing imported: {exc}", BAD_DATA) from exc
    out.write(f"imported {summary['user_id']}: {summary['sessions']} sessions, "
              f"{summary['turns']} turns, {summary['memories']} memories\n")
    return OK


def _forget(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    user = args.user
    if not store.has_user(user):  # workflows or a working context alone count too
        raise CommandError(f"unknown user {user!r} in this database", UNKNOWN_USER)
    if not args.yes:
        if not sys.stdin.isatty():
            raise CommandError("not a terminal: pass --yes to forget without a prompt", REFUSED)
        counts = store.counts(user)
        try:
            answer = input(f"Delete {counts['memories']} memories and {counts['turns']} turns "
                           f"of {user!r}? Type the user id to confirm: ")
        except (EOFError, KeyboardInterrupt):
            answer = ""
        if answer.strip() != user:
            raise CommandError("not confirmed; nothing deleted", REFUSED)
    store.forget(user)
    out.write(f"forgot {user}\n")
    return OK


def _stats(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    user = _known(store, args.user) if args.user else None
    counts = store.counts(user)
    usage = store.usage(user)
    backlog = store.reflection_counts(user)
    figures = {**counts, "sessions_waiting": backlog["waiting"],
               "sessions_failed": backlog["failed"], "llm_calls": usage["calls"],
               "prompt_tokens": usage["prompt_tokens"],
               "completion_tokens": usage["completion_tokens"], "llm_failures": usage["failures"]}
    if args.json:
        out.write(json.dumps(figures) + "\n")
    else:
        for name, value in figures.items():
            out.write(f"{name:<18}{value:>12}\n")
    return OK


HANDLERS: dict[str, Callable[[Store, argparse.Namespace, TextIO], int]] = {
    "inspect": _inspect, "search": _search, "export": _export, "import": _import,
    "forget": _forget, "stats": _stats,
}


def _records(lines: TextIO) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"line {number} is not JSON: {exc}") from exc
            if not isinstance(record, dict):
                raise InvalidInputError(f"line {number} is not a JSON object")
            yield record


def _iso(value: Any) -> str:
    return value.isoformat(timespec="seconds") if value is not None else "-"


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
