"""What each operator command does, given the open store and its parsed arguments
(`HANDLERS`); `commands` parses them and runs one."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, TextIO

from ..errors import InvalidInputError, RMMError, StorageError
from ..storage.base import Store
from ..text import clip
from ..types import iso
from .exits import BAD_DATA, NOT_REFLECTED, OK, REFUSED, UNKNOWN_USER, USAGE, CommandError
from .progress import progress
from .strict_json import loads
from .transfer import export_records, import_records


def _known(store: Store, user_id: str) -> str:
    if user_id not in store.users():
        raise CommandError(f"unknown user {user_id!r} in this database", UNKNOWN_USER)
    return user_id


def _users(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    users = store.users()
    for user in users:
        counts = store.counts(user)
        backlog = store.reflection_counts(user)
        row = {"user_id": user, "sessions": counts["sessions"], "turns": counts["turns"],
               "memories": counts["memories"], "sessions_waiting": backlog["waiting"],
               "sessions_failed": backlog["failed"]}
        if args.json:
            out.write(json.dumps(row) + "\n")
        else:
            out.write(f"{user}  {row['sessions']} sessions, {row['turns']} turns, "
                      f"{row['memories']} memories, {row['sessions_waiting']} waiting, "
                      f"{row['sessions_failed']} failed\n")
    if not args.json:
        out.write(f"{len(users)} user{'' if len(users) == 1 else 's'}\n")
    return OK


def _inspect(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    user = _known(store, args.user)
    if args.limit is not None and args.limit < 1:
        raise CommandError("--limit must be at least 1", USAGE)
    if args.memory is not None:
        memories = store.memories(user, [args.memory])
        if not memories:
            raise CommandError(f"no memory {args.memory!r} for user {user!r}", UNKNOWN_USER)
        total = 1
    else:
        memories = store.memories(user)
        total = len(memories)
        memories = memories[:args.limit]
    wanted = {r for m in memories for r in m.refs}
    turns = {t.id: t for t in store.turns(user) if t.id in wanted}
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
        out.write(f"    text: {clip(m.text, 300)}\n    key:  {clip(m.key, 200)}\n")
        out.write("    from turns:\n")
        for ref in m.refs:
            turn = turns.get(ref)
            line = f"{turn.speaker}: {clip(turn.text, 120)}" if turn else "(not in the log)"
            out.write(f"      {ref}  {line}\n")
        out.write("    versions:\n")
        for v in m.versions:
            out.write(f"      v{v.version} {v.reason} {_iso(v.at)}: {clip(v.text, 120)}\n")
    if not args.json:
        shown = f"{len(memories)} of {total}" if len(memories) < total else f"{total}"
        out.write(f"{shown} memories of {user}\n")
    return OK


def _reader(store: Store, config: Any = None, llm: Any = None) -> Any:
    """A memory that opens without crash recovery: `search` must not write, `reflect`
    chooses which sessions itself. Built here, not at import, so that `rmm --help` and the
    other commands load no model."""
    from ..memory import ReflectiveMemory

    return ReflectiveMemory(store, config=config, llm=llm, recover=False)


def _add(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    from ..config import MemoryConfig
    from .sessions_file import read_sessions, sample_path

    sessions: list[dict[str, Any]] = []
    if args.occurred_at is not None and args.text is None:
        raise CommandError("--occurred-at goes with --text (a file's sessions carry their "
                           "own started_at)", USAGE)
    if args.text is None:
        path = sample_path() if args.sample else args.file
        try:
            sessions = read_sessions(path)
        except FileNotFoundError as exc:
            raise CommandError(f"no file {path!r}; to add it as a fact, give it with --text: "
                               f"rmm add --user {shlex.quote(args.user)} --text "
                               f"{shlex.quote(str(path))}", BAD_DATA) from exc
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}", BAD_DATA) from exc
        except InvalidInputError as exc:
            raise CommandError(f"nothing added: {exc}", BAD_DATA) from exc
    try:
        mem = _reader(store, MemoryConfig(embedding={"model": args.embedding_model}))
    except (RMMError, OSError) as exc:
        raise CommandError(f"cannot load the embedding model: {exc}", USAGE) from exc
    if args.text is not None:
        return _add_fact(mem, args, out)
    added, skipped, memories = [0, 0], [0, 0], 0
    for session in progress(sessions, desc="reflecting", unit="session"):
        before = store.counts(args.user)["turns"]
        try:
            memories += len(mem.add_session(user_id=args.user, **session))
        except InvalidInputError as exc:  # e.g. a turn id reused with other words
            raise CommandError(f"stopped: {exc}", BAD_DATA) from exc
        tally = added if store.counts(args.user)["turns"] > before else skipped
        tally[0] += 1
        tally[1] += len(session["turns"])
    said = [f"added {_sessions(*added)} for {args.user}: {memories} memories added or merged"
            if added[0] else f"nothing added for {args.user}"]
    if skipped[0]:
        said.append(f"{_sessions(*skipped)} already stored, skipped")
    out.write("; ".join(said) + "\n")
    return OK


def _add_fact(mem: Any, args: argparse.Namespace, out: TextIO) -> int:
    """`rmm add --text`: one fact, stored as it is (`ReflectiveMemory.add`)."""
    before = mem.store.counts(args.user)["memories"]
    try:
        made = mem.add(args.text, user_id=args.user, occurred_at=args.occurred_at)
    except InvalidInputError as exc:
        raise CommandError(f"nothing added: {exc}", BAD_DATA) from exc
    ids = ", ".join(m.id for m in made)
    if mem.store.counts(args.user)["memories"] == before:
        out.write(f"already stored for {args.user}, nothing added: {ids}\n")
    else:
        out.write(f"added a fact for {args.user}: {len(made)} "
                  f"memor{'y' if len(made) == 1 else 'ies'} {ids}\n")
    return OK


def _sessions(sessions: int, turns: int) -> str:
    return f"{sessions} session{'' if sessions == 1 else 's'} ({turns} turn" \
        f"{'' if turns == 1 else 's'})"


def _search(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    user = _known(store, args.user)
    if args.k < 1:
        raise CommandError("--k must be at least 1", USAGE)
    if args.budget < 1:
        raise CommandError("--budget must be at least 1", USAGE)
    try:
        from ..config import MemoryConfig

        mem = _reader(store, MemoryConfig(embedding={"model": args.embedding_model}))
    except (RMMError, OSError) as exc:
        raise CommandError(f"cannot load the embedding model: {exc}", USAGE) from exc
    try:
        result = mem.search(args.query, user_id=user, k=args.k, explain=args.explain)
    except InvalidInputError as exc:
        raise CommandError(str(exc), USAGE) from exc
    if args.explain:
        from ..read.explain import format_explanation

        result.explanation.budget = args.budget
        if args.json:
            out.write(json.dumps(result.explanation.as_dict()) + "\n")
        else:
            out.write(format_explanation(result.explanation) + "\n")
        return OK
    for hit in result:
        if args.json:
            out.write(json.dumps({"rank": hit.rank, "score": hit.score, "id": hit.memory.id,
                                  "refs": hit.refs, "text": hit.text, "current": hit.current,
                                  "valid_to": iso(hit.memory.valid_to)}) + "\n")
        else:
            out.write(f"{hit.rank}. score {hit.score:.3f}  {hit.memory.id}  "
                      f"refs {', '.join(hit.refs)}\n   {clip(hit.text, 300)}\n")
    if not result.hits and not args.json:
        out.write("no hits\n")
    return OK


def _reflect(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    from pydantic import ValidationError

    from ..config import MemoryConfig

    users = [_known(store, args.user)] if args.user else store.users()
    try:
        config = MemoryConfig(**dict(_setting(s) for s in args.set))
    except ValidationError as exc:
        raise CommandError(f"bad --set: {exc}", USAGE) from exc
    llm = None
    if args.llm_url:
        from ..models.llm import OpenAICompatibleLLM

        llm = OpenAICompatibleLLM(args.llm_url, args.llm_model,
                                  api_key=os.environ.get("OPENAI_API_KEY"))
    try:
        mem = _reader(store, config, llm)
    except (RMMError, OSError) as exc:
        raise CommandError(f"cannot load the embedding model: {exc}", USAGE) from exc
    timeout = config.sessions.idle_timeout
    idle_before = float("inf") if args.open else (time.time() - timeout if timeout else None)
    limit = None if args.retry_failed else config.sessions.reflection_max_attempts
    waiting = [s for u in users
               for s in store.pending_sessions(idle_before, u, max_failures=limit)]
    memories, failed = 0, []
    for state in progress(waiting, desc="reflecting", unit="session"):
        try:
            memories += len(mem.end_session(user_id=state.user_id, session_id=state.session_id))
        except RMMError as exc:  # recorded on the session; the others go on
            failed.append(f"{state.user_id}/{state.session_id}: {exc}")
    out.write(f"reflected {len(waiting) - len(failed)} of {len(waiting)} sessions: "
              f"{memories} memories added or merged\n")
    for line in failed:
        print(f"rmm reflect: failed {' '.join(line.split())}", file=sys.stderr)
    return NOT_REFLECTED if failed else OK


def _setting(text: str) -> tuple[str, Any]:
    """`FIELD=VALUE` with a JSON value (`search.max_hit_words=200`, `notes.enabled=true`) or a
    plain string; dotted names and the flat ones of earlier releases alike."""
    field, sep, value = text.partition("=")
    if not sep or not field:
        raise CommandError(f"--set needs FIELD=VALUE, got {text!r}", USAGE)
    try:
        return field, json.loads(value)
    except json.JSONDecodeError:
        return field, value
    except RecursionError as exc:
        raise CommandError(f"--set {field}: the value nests too deeply", USAGE) from exc


def _export(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    user = _known(store, args.user)
    records = progress(export_records(store, user), desc="exporting", unit="record")
    lines = (json.dumps(r, ensure_ascii=False) + "\n" for r in records)
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
    if args.max_bytes < 1:
        raise CommandError("--max-bytes must be at least 1", USAGE)
    try:
        if args.file == "-":
            summary = import_records(store, _records(sys.stdin.buffer, args.max_bytes),
                                     user_id=args.user)
        else:
            with open(args.file, "rb") as f:
                summary = import_records(store, _records(f, args.max_bytes), user_id=args.user)
    except OSError as exc:
        raise CommandError(f"cannot read {args.file}: {exc}", BAD_DATA) from exc
    except (InvalidInputError, StorageError) as exc:
        raise CommandError(f"nothing imported: {exc}", BAD_DATA) from exc
    out.write(f"imported {summary['user_id']}: {summary['sessions']} sessions, "
              f"{summary['turns']} turns, {summary['memories']} memories"
              f"{' (with new memory ids)' if summary['new_ids'] else ''}\n")
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
    recorded = store.embedder()
    name = recorded.name if recorded is not None else None
    advice = _embedder_hint(store, user, name)
    if args.json:
        out.write(json.dumps({**figures, "embedder": name, "embedder_hint": advice}) + "\n")
    else:
        for label, value in figures.items():
            out.write(f"{label:<18}{value:>12}\n")
        out.write(f"{'embedder':<18}{name or 'none yet':>12}\n")
        if advice:
            out.write(f"note: {advice}\n")
    return OK


HINT_TEXTS = 50
"""Memories of one user whose language `rmm stats` reads."""


def _embedder_hint(store: Store, user: str | None, name: str | None) -> str | None:
    """What to install when the store's texts are not English and the English model embeds
    them (`embed_choice.hint`), read from the first memories of `user` (or the first user)."""
    from ..models.embed_choice import hint

    users = [user] if user else store.users()[:1]
    texts = [m.text for u in users for m in store.memories(u)[:HINT_TEXTS]]
    return hint(name, texts) if texts else None


def _mcp(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    from ..mcp.command import run

    return run(store, args, out)


def _ui(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    from ..ui.command import run

    return run(store, args, out)


HANDLERS: dict[str, Callable[[Store, argparse.Namespace, TextIO], int]] = {
    "add": _add, "mcp": _mcp, "ui": _ui,
    "users": _users, "inspect": _inspect, "search": _search, "reflect": _reflect,
    "export": _export, "import": _import, "forget": _forget, "stats": _stats,
}


def _records(file: BinaryIO, max_bytes: int) -> Iterator[dict[str, Any]]:
    """The JSON objects of an export's lines, each parsed strictly (UTF-8, no NaN, bounded
    depth); `InvalidInputError` past `max_bytes` in all, before reading further."""
    size = 0
    lines = iter(lambda: file.readline(max_bytes - size + 1), b"")
    for number, raw in enumerate(progress(lines, desc="reading", unit="line"), start=1):
        size += len(raw)
        if size > max_bytes:
            raise InvalidInputError(f"the file is over {max_bytes:,} bytes, the most "
                                    "`rmm import` reads (--max-bytes)")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"line {number} is not UTF-8 text (byte {exc.start + 1})"
                                    ) from exc
        if line.strip():
            record = loads(line, f"line {number}")
            if not isinstance(record, dict):
                raise InvalidInputError(f"line {number} is not a JSON object")
            yield record


def _iso(value: Any) -> str:
    return value.isoformat(timespec="seconds") if value is not None else "-"
