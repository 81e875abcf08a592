"""SCM's context builder: fits recalled memories into a token budget, each as its raw turns
or its summary (when a judge says the summary suffices), the previous turn always kept."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidInputError
from ..language.dates import format_date
from ..models import prompts
from ..models.llm import metered
from ..models.parse import ask_yes_no
from ..text import Counter, as_counter, content_words
from ..types import MemoryHit, Turn, check_count


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One recalled memory and what the builder did with it."""

    memory_id: str
    form: str  # "raw" | "summary" | "dropped"
    reason: str
    text: str
    cost: int
    refs: tuple[str, ...]


@dataclass(slots=True)
class BuiltContext:
    """What goes into the LLM's context, and an account of every choice."""

    text: str
    items: list[ContextItem]
    flash: str | None
    cost: int
    budget: int

    @property
    def used(self) -> list[ContextItem]:
        return [i for i in self.items if i.form != "dropped"]

    @property
    def refs(self) -> list[str]:
        return list(dict.fromkeys(r for i in self.used for r in i.refs))


@runtime_checkable
class SummaryJudge(Protocol):
    """Does a memory's summary hold what the query needs from its raw turns?"""

    def suffices(self, query: str, summary: str, raw: str) -> bool: ...


class OverlapJudge:
    """LLM-free: the summary suffices when it keeps at least `ratio` of the query's content
    words that the raw turns contain (names, numbers and topic words survive summaries)."""

    def __init__(self, ratio: float = 1.0) -> None:
        self.ratio = ratio

    def suffices(self, query: str, summary: str, raw: str) -> bool:
        wanted = content_words(query) & content_words(raw)
        if not wanted:
            return True
        return len(wanted & content_words(summary)) >= self.ratio * len(wanted)


class LLMSummaryJudge:
    """SCM's summary-or-full judgement by the LLM; unclear answers fall back to overlap."""

    def __init__(self, llm: Any, fallback: SummaryJudge | None = None) -> None:
        self.llm = metered(llm)
        self.fallback = fallback or OverlapJudge()

    def suffices(self, query: str, summary: str, raw: str) -> bool:
        verdict = ask_yes_no(self.llm, "summary judgement",
                              prompts.SUMMARY_SUFFICES.format(query=query, summary=summary))
        return self.fallback.suffices(query, summary, raw) if verdict is None else verdict


@dataclass(slots=True)
class Candidate:
    """A recalled memory in the two forms the builder can choose from."""

    memory_id: str
    raw: str
    summary: str | None
    refs: tuple[str, ...]


class ContextBuilder:
    """Fits recalled memories into `budget` units (tokens by default), best first.

    Per memory: its raw turns when they fit and are at most `long_raw` units; else its
    summary when that fits and the judge says it suffices for the query; else the raw turns
    if they fit; else it is dropped. Turns already in context are not paid for twice. The
    previous turn is reserved first and always kept.
    """

    def __init__(self, *, budget: int = 1000, long_raw: int = 200,
                 unit: str | Counter = "tokens", judge: SummaryJudge | None = None) -> None:
        check_count(budget, "budget")
        if not isinstance(long_raw, int) or long_raw < 1:
            raise InvalidInputError(f"long_raw must be a positive integer, got {long_raw!r}")
        self.budget, self.long_raw = budget, long_raw
        self.count = as_counter(unit)
        self.judge = judge or OverlapJudge()

    def build(self, query: str, candidates: Sequence[Candidate], *,
              previous_turn: str | None = None, budget: int | None = None) -> BuiltContext:
        budget = self.budget if budget is None else budget
        flash = previous_turn.strip() if previous_turn and previous_turn.strip() else None
        spent = self.count(flash) if flash else 0
        items: list[ContextItem] = []
        seen: set[str] = set()
        for cand in candidates:
            item = self._choose(query, cand, budget - spent, seen)
            items.append(item)
            if item.form != "dropped":
                spent += item.cost
                seen.update(item.refs)
        parts = [i.text for i in items if i.form != "dropped"]
        text = "\n\n".join(parts)
        if flash:
            text = f"{text}\n\nPrevious turn:\n{flash}" if text else f"Previous turn:\n{flash}"
        return BuiltContext(text, items, flash, spent, budget)

    def _choose(self, query: str, cand: Candidate, room: int, seen: set[str]) -> ContextItem:
        def item(form: str, reason: str, text: str = "") -> ContextItem:
            return ContextItem(cand.memory_id, form, reason, text,
                               self.count(text) if text else 0, cand.refs)

        if cand.refs and set(cand.refs) <= seen:
            return item("dropped", "its turns are already in context")
        raw_cost = self.count(cand.raw)
        fits = raw_cost <= room
        if fits and raw_cost <= self.long_raw:
            return item("raw", f"raw turns fit ({raw_cost} <= {self.long_raw})", cand.raw)
        if cand.summary:
            cost = self.count(cand.summary)
            if cost <= room and cost < raw_cost and \
                    self.judge.suffices(query, cand.summary, cand.raw):
                why = "long" if fits else "over the remaining budget"
                return item("summary", f"raw turns {why} ({raw_cost}); summary suffices "
                                       f"({cost})", cand.summary)
        if fits:
            return item("raw", f"raw turns fit ({raw_cost}); summary would not do", cand.raw)
        return item("dropped", f"over budget ({raw_cost} > {room} left)")


def candidates_from(hits: Sequence[MemoryHit], turns: dict[str, Turn], *,
                    dates: bool = True) -> list[Candidate]:
    """Each hit as (raw turns rendered from the log, summary): the memory's text when it
    differs from its turns (an LLM summary, or the retrieved passage of a long turn); none
    for a memory that is its turns verbatim (its retrieval key is for BM25, not for reading)."""
    out = []
    for hit in hits:
        memory = hit.memory
        lines = [turns[r].render() for r in memory.refs if r in turns]
        raw = "\n".join(lines) if lines else memory.text
        summary = memory.text if memory.text.strip() != raw.strip() else None
        if dates and memory.occurred_at is not None:
            stamp = f"[{format_date(memory.occurred_at)}] "
            raw, summary = stamp + raw, stamp + summary if summary else None
        out.append(Candidate(memory.id, raw, summary, tuple(memory.refs)))
    return out
