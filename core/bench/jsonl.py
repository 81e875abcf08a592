"""The generic JSON Lines format: anyone's own conversations as benchmark data.

One JSON object per line; blank lines are skipped. A line is a session or a question:

    {"conversation": "alice", "session": "s1", "date": "2024-03-15T09:30",
     "turns": [{"id": "1", "speaker": "alice", "text": "I adopted a dog, Biscuit."}]}
    {"conversation": "alice", "question": "What is my dog called?", "evidence": ["1"]}

A conversation is one user. Sessions are fed in file order; `date` (ISO 8601, optional) is
the session's start. Turn ids are strings, unique within their conversation; a question's
`evidence` names the turns that answer it (a question with none is left out and counted).
`answer` and `category` are optional. Bad input raises `InvalidInputError` naming the line.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InvalidInputError
from ..types import Turn
from .records import Conversation, Question, Session, pick


class SessionLine(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    conversation: str = Field(min_length=1)
    session: str = Field(min_length=1)
    date: datetime | None = Field(default=None, strict=False)
    turns: list[dict] = Field(min_length=1)


class QuestionLine(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    conversation: str = Field(min_length=1)
    question: str = Field(min_length=1)
    evidence: list[str]
    answer: str = ""
    category: str = ""


def load_jsonl(path: str | Path, select: list[int] | None = None) -> list[Conversation]:
    """Read conversations from a JSON Lines file (format in this module's docstring), in order
    of first appearance."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"JSON Lines file not found: {path}")
    sessions: dict[str, list[Session]] = {}
    turn_ids: dict[str, set[str]] = {}
    questions: list[tuple[int, QuestionLine]] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            record = _parse(line, number)
            if isinstance(record, QuestionLine):
                questions.append((number, record))
                continue
            convo = sessions.setdefault(record.conversation, [])
            if any(s.session_id == record.session for s in convo):
                raise _error(number, f"session {record.session!r} repeats in conversation "
                                     f"{record.conversation!r}")
            turns = [_turn(t, number, turn_ids.setdefault(record.conversation, set()))
                     for t in record.turns]
            convo.append(Session(record.session, record.date, turns))
    if not sessions:
        raise InvalidInputError(f"{path}: no session lines")
    for number, q in questions:
        if q.conversation not in sessions:
            raise _error(number, f"conversation {q.conversation!r} has no session")
    return pick([_conversation(name, convo, turn_ids[name], questions)
                 for name, convo in sessions.items()], select, "conversation")


def _parse(line: str, number: int) -> SessionLine | QuestionLine:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _error(number, f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict) or ("turns" in data) == ("question" in data):
        raise _error(number, "a line is an object with `turns` (a session) or `question`")
    try:
        return (SessionLine if "turns" in data else QuestionLine).model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise _error(number, problems) from None


def _turn(data: dict, number: int, seen: set[str]) -> Turn:
    try:
        turn = Turn.coerce(data)
    except InvalidInputError as exc:
        raise _error(number, str(exc)) from None
    if turn.id is None:
        raise _error(number, f"turn without an id: {turn.text[:40]!r}")
    if turn.id in seen:
        raise _error(number, f"turn id {turn.id!r} repeats in its conversation")
    seen.add(turn.id)
    return turn


def _conversation(name: str, sessions: list[Session], known: set[str],
                  questions: list[tuple[int, QuestionLine]]) -> Conversation:
    kept, skipped = [], 0
    for number, q in questions:
        if q.conversation != name:
            continue
        unknown = sorted(set(q.evidence) - known)
        if unknown:
            raise _error(number, f"evidence names no turn of {name!r}: {unknown}")
        if not q.evidence:
            skipped += 1
            continue
        kept.append(Question(q.question, q.answer, frozenset(q.evidence), q.category))
    return Conversation(name, tuple(dict.fromkeys(t.speaker for s in sessions for t in s.turns)),
                        sessions, kept, skipped=skipped)


def _error(number: int, message: str) -> InvalidInputError:
    return InvalidInputError(f"line {number}: {message}")
