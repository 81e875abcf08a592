"""SCM (self-controlled memory): a gate that decides whether an input needs long-term memory,
and a context builder that fits recalled memories into a token budget as raw turns or
summaries, always keeping the previous turn ("flash memory")."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from . import prompts
from .context import format_date
from .errors import InvalidInputError
from .llm import metered
from .parse import ask_yes_no
from .text import Counter, as_counter, content_words
from .types import MemoryHit, SearchResult, Turn, check_id


# the activation gate ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GateDecision:
    """Whether to recall, and why (shown to users in logs and the cookbook)."""

    use_memory: bool
    reason: str


Probe = Callable[[str], float]
"""Cheap look at the memory bank: the best cosine of any memory to the query (0 when empty)."""


@runtime_checkable
class Gate(Protocol):
    """Decides whether an input needs long-term memory at all."""

    def decide(self, query: str, *, previous_turn: str | None = None,
               probe: Probe | None = None) -> GateDecision: ...


_SMALL_TALK = re.compile(
    r"^\s*(hi|hello|hey|yo|thanks|thank you|thx|ok|okay|cool|great|nice|sure|yes|no|yep|nope|"
    r"lol|haha|bye|goodbye|good (morning|night|evening)|see you|got it|sounds good|"
    r"how are you( doing)?|what'?s up)\b[\s!.?,:)]*$", re.I)
_PAST_CUES = re.compile(
    r"\b(remember|recall|remind|forgot|forget|last (time|week|month|year|session)|earlier|"
    r"before|previously|ago|yesterday|you (said|told|mentioned|asked)|i (said|told|mentioned)|"
    r"we (talked|discussed|spoke)|again|still|used to|since when|when did|did i|have i|"
    r"my|mine|about me|do you know)\b", re.I)


class RuleGate:
    """LLM-free gate: small talk skips; references to the past or to the user recall;
    otherwise recall only when some memory is similar enough to the input (`probe`)."""

    def __init__(self, *, threshold: float = 0.35, cues: re.Pattern[str] = _PAST_CUES,
                 small_talk: re.Pattern[str] = _SMALL_TALK) -> None:
        self.threshold, self.cues, self.small_talk = threshold, cues, small_talk

    def decide(self, query: str, *, previous_turn: str | None = None,
               probe: Probe | None = None) -> GateDecision:
        if self.small_talk.match(query) or not content_words(query):
            return GateDecision(False, "small talk")
        cue = self.cues.search(query)
        if cue:
            return GateDecision(True, f"refers to the past or to the user ({cue.group(0)!r})")
        if probe is None:
            return GateDecision(False, "no reference to the past and no memory probe")
        best = probe(query)
        if best >= self.threshold:
            return GateDecision(True, f"best memory similarity {best:.2f} >= {self.threshold:.2f}")
        return GateDecision(False, f"best memory similarity {best:.2f} < {self.threshold:.2f}")




class LLMGate:
    """SCM's controller judgement: the LLM answers YES or NO; any failure or an unclear
    answer falls back to the LLM-free gate (with a warning)."""

    def __init__(self, llm: Any, fallback: Gate | None = None) -> None:
        self.llm = metered(llm)
        self.fallback = fallback or RuleGate()

    def decide(self, query: str, *, previous_turn: str | None = None,
               probe: Probe | None = None) -> GateDecision:
        prompt = prompts.GATE.format(previous=previous_turn or "(none)", query=query)
        verdict = ask_yes_no(self.llm, "memory gate", prompt)
        if verdict is None:
            decision = self.fallback.decide(query, previous_turn=previous_turn, probe=probe)
            return GateDecision(decision.use_memory, f"LLM unclear; {decision.reason}")
        return GateDecision(verdict, "LLM: memory needed" if verdict else "LLM: not needed")




# the context builder ----------------------------------------------------------------------------
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
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
            raise InvalidInputError(f"budget must be a positive integer, got {budget!r}")
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


# putting it together ------------------------------------------------------------------------------
@dataclass(slots=True)
class Recall:
    """The outcome of `ReflectiveMemory.recall`: the gate's call, the search, the context."""

    query: str
    decision: GateDecision
    context: BuiltContext
    result: SearchResult | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.context.text


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


class RecallSource(Protocol):
    """What the controller reads (`ReflectiveMemory` is one): search, the turn log, and a
    cheap similarity probe for the gate."""

    def search(self, query: str, *, user_id: str, k: int = 5) -> SearchResult: ...

    def turns(self, *, user_id: str, session_id: str | None = None) -> list[Turn]: ...

    def best_similarity(self, query: str, *, user_id: str) -> float: ...


class SCMController:
    """Gate, then search, then build: what `ReflectiveMemory.recall` runs."""

    def __init__(self, gate: Gate | None = None, builder: ContextBuilder | None = None,
                 *, k: int = 10) -> None:
        self.gate = gate or RuleGate()
        self.builder = builder or ContextBuilder()
        self.k = k

    @classmethod
    def for_llm(cls, llm: Any = None, **builder: Any) -> SCMController:
        """LLM gate and judge when an LLM is given, their LLM-free forms otherwise."""
        if llm is None:
            return cls(RuleGate(), ContextBuilder(**builder))
        return cls(LLMGate(llm), ContextBuilder(judge=LLMSummaryJudge(llm), **builder))

    def recall(self, mem: RecallSource, query: str, *, user_id: str,
               previous_turn: str | Turn | None = None, budget: int | None = None,
               k: int | None = None, dates: bool = True) -> Recall:
        """Gate, search and build for `query`; `dates` stamps each memory with its date."""
        import time

        user_id = check_id(user_id, "user_id")
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, not {type(query).__name__}")
        if isinstance(previous_turn, Turn):
            previous_turn = previous_turn.render()
        if previous_turn is not None and not isinstance(previous_turn, str):
            raise InvalidInputError("previous_turn must be a string or a Turn")
        t0 = time.perf_counter()
        decision = self.gate.decide(query, previous_turn=previous_turn,
                                    probe=lambda q: mem.best_similarity(q, user_id=user_id))
        t1 = time.perf_counter()
        if not decision.use_memory:
            context = self.builder.build(query, [], previous_turn=previous_turn, budget=budget)
            return Recall(query, decision, context, None, {"gate": t1 - t0})
        result = mem.search(query, user_id=user_id, k=k or self.k)
        t2 = time.perf_counter()
        turns = _turns_of(mem, user_id, result.hits)
        cands = candidates_from(result.hits, turns, dates=dates)
        context = self.builder.build(query, cands, previous_turn=previous_turn, budget=budget)
        return Recall(query, decision, context, result,
                      {"gate": t1 - t0, "search": t2 - t1, "build": time.perf_counter() - t2})


def _turns_of(mem: RecallSource, user_id: str, hits: Sequence[MemoryHit]) -> dict[str, Turn]:
    """The raw turns the hits refer to, read session by session (not the whole log)."""
    wanted = {r for hit in hits for r in hit.refs}
    sessions = {s for hit in hits for s in hit.memory.session_ids}
    log = ([t for s in sessions for t in mem.turns(user_id=user_id, session_id=s)]
           if sessions else mem.turns(user_id=user_id))
    found = {t.id: t for t in log if t.id in wanted}
    if len(found) < len(wanted):  # refs outside the listed sessions: read the whole log
        found = {t.id: t for t in mem.turns(user_id=user_id) if t.id in wanted}
    return found
