"""Conversations from a file, as `add_session` arguments: what `rmm add` ingests, and the
sample conversation that ships with the package.

Accepted: JSON holding a list of sessions, `{"sessions": [...]}` (other top-level keys such
as `questions` are ignored) or a list of messages (one session); JSON Lines with one session
or one message a line. A session is `{"turns": [...], "session_id"?, "started_at"?,
"metadata"?}`; a message is any form `Turn.coerce` takes (`speaker`/`text` or
`role`/`content`). Turns are checked here, so a bad file fails before anything is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ..types import Turn
from .strict_json import loads

SESSION_FIELDS = frozenset({"turns", "session_id", "started_at", "metadata"})


def sample_path() -> Path:
    """The packaged sample: five sessions of Maya's over four months, with questions."""
    return Path(str(files("rmm_core") / "data" / "sample_conversation.json"))


def read_sessions(path: str | Path) -> list[dict[str, Any]]:
    """The sessions of a JSON or JSON Lines file, checked; `InvalidInputError` names what is
    wrong and where."""
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"the file is not UTF-8 text (byte {exc.start + 1})") from exc
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    try:
        data: Any = loads(text, "the file")
    except InvalidInputError:
        if len(lines) < 2:  # not JSON Lines either: the whole file's error says most
            raise
        data = [loads(line, f"line {n}") for n, line in lines]
    if isinstance(data, Mapping):
        if "sessions" not in data:
            raise InvalidInputError("a JSON object needs a 'sessions' list")
        data = data["sessions"]
    if not isinstance(data, list) or not data:
        raise InvalidInputError("expected a non-empty list of sessions or messages")
    if all(isinstance(item, Mapping) and "turns" in item for item in data):
        return [_session(n, item) for n, item in enumerate(data, 1)]
    if any(isinstance(item, Mapping) and "turns" in item for item in data):
        raise InvalidInputError("mixes sessions (with 'turns') and single messages")
    return [_session(1, {"turns": data})]


def _session(number: int, item: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(item) - SESSION_FIELDS
    if unknown:
        raise InvalidInputError(f"session {number}: unknown field(s) {sorted(unknown)}")
    turns = item["turns"]
    if not isinstance(turns, list) or not turns:
        raise InvalidInputError(f"session {number}: 'turns' must be a non-empty list")
    checked = []
    for position, turn in enumerate(turns, 1):
        try:
            checked.append(Turn.coerce(turn))
        except InvalidInputError as exc:
            raise InvalidInputError(f"session {number}, turn {position}: {exc}") from exc
    return {**item, "turns": checked}
