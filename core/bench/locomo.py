"""LoCoMo loader: conversations as sessions of `Turn`s (id = dia_id) plus resolvable questions."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from ..types import Turn
from .records import Conversation, Question, Session, ingest, pick

__all__ = ["Conversation", "Question", "Session", "ingest", "load_locomo"]

CATEGORY_NAMES = {"1": "1 multi-hop", "2": "2 temporal", "3": "3 open-domain",
                  "4": "4 single-hop"}
"""LoCoMo's question categories as its evaluation names them (5, adversarial, is left out)."""

_EVIDENCE = re.compile(r"D\d+:\d+")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")


def render_turn(turn: dict) -> str:
    """A LoCoMo turn's text, with the shared image's caption where there is one."""
    text = turn["text"]
    if turn.get("blip_caption"):
        text += f" [image: {turn['blip_caption']}]"
    return text


def parse_date(value: str | None) -> datetime | None:
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime((value or "").strip(), fmt)
        except ValueError:
            continue
    return None


def load_locomo(path: str | Path, select: list[int] | None = None) -> list[Conversation]:
    """Read the LoCoMo JSON; questions of categories 1-4 whose evidence resolves to turns."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"LoCoMo file not found: {path}")
    samples = json.loads(path.read_text())
    return [_conversation(sample) for sample in pick(samples, select, "LoCoMo conversation")]


def _conversation(sample: dict) -> Conversation:
    conv = sample["conversation"]
    sessions: list[Session] = []
    n = 1
    while f"session_{n}" in conv or f"session_{n}_date_time" in conv:
        raw = conv.get(f"session_{n}") or []
        if raw:
            turns = [Turn(t["speaker"], render_turn(t), t["dia_id"]) for t in raw]
            sessions.append(Session(f"session_{n}", parse_date(conv.get(f"session_{n}_date_time")),
                                    turns))
        n += 1
    known = {t.id for s in sessions for t in s.turns}
    questions = []
    for qa in sample.get("qa", []):
        if qa.get("category") == 5:
            continue
        evidence = frozenset(_EVIDENCE.findall(" ".join(map(str, qa.get("evidence", []))))) & known
        if evidence:
            questions.append(Question(qa["question"], str(qa.get("answer", "")), evidence,
                                      int(qa["category"])))
    observations: dict[str, list[tuple[str, str, str]]] = {}
    for key, by_speaker in (sample.get("observation") or {}).items():
        session = key.removesuffix("_observation")
        for speaker, facts in by_speaker.items():
            for fact in facts:
                for turn_id in _EVIDENCE.findall(str(fact[1]) if len(fact) > 1 else ""):
                    observations.setdefault(session, []).append((speaker, fact[0], turn_id))
    return Conversation(sample["sample_id"], (conv["speaker_a"], conv["speaker_b"]), sessions,
                        questions, observations, len(sample.get("qa", [])) - len(questions))
