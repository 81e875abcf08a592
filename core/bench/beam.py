"""BEAM loader: user-assistant chats, one batch = one session, gold = message ids."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ..types import Turn
from .records import Conversation, Question, Session, pick

_MARKER = re.compile(r"\s*->->[^\n]*\Z")
"""The ` ->-> batch,turn` tag ending most user messages (a few are malformed: `2,N/A`)."""
_QUESTION_FILES = ("probing_questions.json", "probing_questions/probing_questions.json")
_ANSWER_KEYS = ("answer", "ideal_answer", "ideal_response", "ideal_summary")


def load_beam(path: str | Path, select: list[int] | None = None) -> list[Conversation]:
    """Read a BEAM track directory (conversations `1`, `2`, ... in numeric order) or one
    conversation's directory; questions without gold evidence (abstention) are left out."""
    path = Path(path)
    if (path / "chat.json").is_file():
        found = [path]
    elif path.is_dir():
        found = sorted((d for d in path.iterdir() if (d / "chat.json").is_file()),
                       key=lambda d: (not d.name.isdigit(), int(d.name) if d.name.isdigit()
                                      else 0, d.name))
    else:
        found = []
    if not found:
        raise FileNotFoundError(f"no BEAM conversation (a directory with chat.json) at {path}")
    return [_conversation(d) for d in pick(found, select, "BEAM conversation")]


def _conversation(folder: Path) -> Conversation:
    sessions = [_session(batch) for batch in json.loads((folder / "chat.json").read_text())]
    known = {t.id for s in sessions for t in s.turns}
    questions, skipped = [], 0
    for kind, items in _probing_questions(folder).items():
        for item in items:
            evidence = frozenset(map(str, _flatten(item.get("source_chat_ids")))) & known
            if not evidence:
                skipped += 1
                continue
            answer = next((str(item[k]) for k in _ANSWER_KEYS if k in item), "")
            questions.append(Question(item["question"], answer, evidence, kind,
                                      _sides(item.get("source_chat_ids"), known)))
    return Conversation(f"beam-{folder.name}", ("user", "assistant"), sessions, questions,
                        skipped=skipped)


def _session(batch: dict) -> Session:
    messages = [m for exchange in batch["turns"] for m in exchange]
    anchor = batch.get("time_anchor") or next(
        (m["time_anchor"] for m in messages if m.get("time_anchor")), None)
    turns = [Turn(m["role"], _MARKER.sub("", m["content"]), str(m["id"])) for m in messages]
    return Session(f"batch_{batch['batch_number']}",
                   datetime.strptime(anchor, "%B-%d-%Y") if anchor else None, turns)


def _probing_questions(folder: Path) -> dict[str, list[dict]]:
    for name in _QUESTION_FILES:
        if (folder / name).is_file():
            return json.loads((folder / name).read_text())
    raise FileNotFoundError(f"no probing_questions.json in {folder}")


def _sides(ids: Any, known: set[str]) -> tuple[tuple[str, frozenset[str]], ...]:
    """The named id lists of a dict `source_chat_ids` (e.g. `original_info`, `updated_info`),
    kept apart for the probe metrics; a plain list has no sides."""
    if not isinstance(ids, dict):
        return ()
    return tuple((str(key), frozenset(map(str, _flatten(value))) & known)
                 for key, value in ids.items())


def _flatten(ids: Any) -> list[Any]:
    """`source_chat_ids`: a list of ids, or a dict of such lists (original/updated info)."""
    if isinstance(ids, dict):
        return [i for v in ids.values() for i in _flatten(v)]
    if isinstance(ids, list):
        return [i for v in ids for i in _flatten(v)]
    return [] if ids is None else [ids]
