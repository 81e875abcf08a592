"""Extraction: turn segments into memory drafts (RMM topic memories, LLM-free form)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .session import Draft, SessionInput
from .types import Turn


@runtime_checkable
class Extractor(Protocol):
    """Proposes memories for a session, each with the ids of the turns it came from."""

    def extract(self, session: SessionInput, segments: list[list[int]]) -> list[Draft]: ...


def render_turns(turns: list[Turn]) -> str:
    """Raw turns as context lines, one `speaker: text` per line."""
    return "\n".join(t.render() for t in turns)


class SegmentExtractor:
    """Each segment becomes one memory holding its raw turns (no LLM, nothing paraphrased)."""

    def extract(self, session: SessionInput, segments: list[list[int]]) -> list[Draft]:
        drafts = []
        for positions in segments:
            turns = [session.turns[i] for i in positions]
            drafts.append(Draft(
                text=render_turns(turns),
                refs=[t.id for t in turns],
                speakers=list(dict.fromkeys(t.speaker for t in turns)),
                occurred_at=turns[0].timestamp or session.started_at,
                attrs={"source": "segment"},
            ))
        return drafts
