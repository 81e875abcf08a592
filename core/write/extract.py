"""Extraction: turn segments into memory drafts (RMM topic memories, LLM-free form)."""

from __future__ import annotations

import json
import re
from typing import Any, Protocol, runtime_checkable

from ..config import DEFAULT_UNIT_WORDS
from ..language.tokens import tokenize
from ..language.units import split_text
from ..models import prompts
from ..models.llm import metered
from ..models.parse import ParseError, as_index, ask, load_json, with_fallback
from ..types import Turn
from .session import Draft, SessionInput


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
                refs=list(dict.fromkeys(t.id for t in turns)),
                speakers=list(dict.fromkeys(t.speaker for t in turns)),
                occurred_at=turns[0].timestamp or session.started_at,
                attrs={"source": "segment"}, positions=list(positions),
            ))
        return drafts


# LLM extraction (RMM topic memories) ---------------------------------------------------------
class LLMExtractor:
    """RMM's topic extraction: one call per session returns, per speaker, memories
    `{summary, reference: [turn numbers]}` or `NO_TRAIT`.

    Summaries name the speaker and carry dates resolved against the session date. The
    segments are shown to the LLM as topic hints; they are also what the LLM-free
    `fallback` turns into memories when the LLM fails twice. A summary longer than
    `max_words` (`search.max_hit_words` less the date prefix) becomes several memories of whole
    sentences, each with the summary's refs;
    a summary refers only to cited turns it shares a content word with.
    """

    def __init__(self, llm: Any, fallback: Extractor | None = None, *,
                 max_words: int = DEFAULT_UNIT_WORDS) -> None:
        self.llm = metered(llm)
        self.fallback = fallback or SegmentExtractor()
        self.max_words = max_words

    def extract(self, session: SessionInput, segments: list[list[int]]) -> list[Draft]:
        speakers = list(dict.fromkeys(t.speaker for t in session.turns))
        date = session.started_at or session.turns[0].timestamp
        prompt = prompts.EXTRACT.format(
            no_trait=prompts.NO_TRAIT, speakers=json.dumps(speakers),
            date=date.strftime("%d %B %Y (%A)") if date else "unknown",
            max_words=self.max_words, topics=_topic_hint(segments),
            turns=prompts.numbered_turns(session.turns))
        return with_fallback(
            "extraction",
            lambda: self._drafts(session, ask(
                self.llm, prompt, lambda a: parse_topics(a, speakers, len(session.turns)))),
            lambda: self.fallback.extract(session, segments))

    def _drafts(self, session: SessionInput, topics: list[tuple[str, str, list[int]]]
                ) -> list[Draft]:
        drafts = []
        for speaker, summary, positions in topics:
            positions = (_carried(session.turns, sorted(set(positions)), summary)
                         or [_anchor(session.turns, speaker, summary)])
            turns = [session.turns[p] for p in positions]
            drafts += [Draft(text=text, refs=list(dict.fromkeys(t.id for t in turns)),
                             speakers=[speaker],
                             occurred_at=turns[0].timestamp or session.started_at,
                             attrs={"source": "llm"}, positions=positions)
                       for text in split_text(summary, self.max_words)]
        return drafts


def parse_topics(answer: str, speakers: list[str], n: int) -> list[tuple[str, str, list[int]]]:
    """(speaker, summary, turn positions) from the per-speaker JSON answer.

    References to unknown turns are dropped (the memory is kept and re-anchored); an
    answer that is only `NO_TRAIT` means nothing personal. A truncated answer keeps only
    the memories that arrived whole.
    """
    if _is_no_trait(answer):
        return []
    value, repaired = load_json(answer)
    if not isinstance(value, dict):
        raise ParseError(f"expected one JSON object keyed by speaker ({', '.join(speakers)})")
    by_name = {s.casefold(): s for s in speakers}
    known = {by_name[k.strip().casefold()]: v for k, v in value.items()
             if isinstance(k, str) and k.strip().casefold() in by_name}
    if not known:
        raise ParseError(f"the keys must be the speaker names {json.dumps(speakers)}")
    out = []
    for speaker, items in known.items():
        if isinstance(items, str) or items is None:
            continue  # NO_TRAIT or an empty answer for this speaker
        if isinstance(items, dict):
            items = [items]
        if not isinstance(items, list):
            raise ParseError(f"the value for {speaker} must be a list or \"{prompts.NO_TRAIT}\"")
        for item in items:
            if isinstance(item, str):
                item = {"summary": item, "reference": []}
            if not isinstance(item, dict):
                continue
            summary = item.get("summary")
            if not isinstance(summary, str) or not summary.strip() or _is_no_trait(summary):
                continue
            if repaired and "reference" not in item:
                continue  # cut off mid-memory
            refs = item.get("reference") or []
            refs = refs if isinstance(refs, list) else [refs]
            positions = [p for p in map(as_index, refs) if p is not None and 0 <= p < n]
            summary = summary.strip()
            if speaker.casefold() not in summary.casefold():
                summary = f"{speaker}: {summary}"  # a memory must say whom it is about
            out.append((speaker, summary, positions))
    return out


def _is_no_trait(text: str) -> bool:
    """The sentinel for "nothing personal", alone or inside a list, quoted or not."""
    return text.strip().strip("\"'`.").upper() == prompts.NO_TRAIT


def _topic_hint(segments: list[list[int]]) -> str:
    if len(segments) < 2:
        return ""
    spans = ", ".join(f"{s[0]}-{s[-1]}" for s in segments if s)
    return f"Topic sections (turn ranges): {spans}\n"


def _carried(turns: list[Turn], positions: list[int], summary: str) -> list[int]:
    """The cited positions whose turn shares a content word with the summary."""
    said, *cited = (set(words) - {""} for words in
                    tokenize([summary, *(turns[p].text for p in positions)]))
    return [p for p, words in zip(positions, cited) if said & words]


def _anchor(turns: list[Turn], speaker: str, summary: str) -> int:
    """The turn (of `speaker` if possible) sharing most words with a memory lacking refs."""
    words = set(re.findall(r"\w+", summary.lower()))
    own = [i for i, t in enumerate(turns) if t.speaker == speaker] or list(range(len(turns)))
    return max(own, key=lambda i: len(words & set(re.findall(r"\w+", turns[i].text.lower()))))
