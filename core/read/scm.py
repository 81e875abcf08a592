"""SCM (self-controlled memory): the controller that runs the gate (`gate.py`: does the input
need long-term memory?), then search, then the context builder (`budget.py`: memories as raw
turns or summaries within a token budget, the previous turn, "flash memory", always kept)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import InvalidInputError
from ..types import MemoryHit, SearchResult, Turn, check_id
from .budget import (
    BuiltContext,
    Candidate,
    ContextBuilder,
    ContextItem,
    LLMSummaryJudge,
    OverlapJudge,
    SummaryJudge,
    candidates_from,
)
from .gate import Gate, GateDecision, LLMGate, RuleGate

__all__ = [
    "BuiltContext",
    "Candidate",
    "ContextBuilder",
    "ContextItem",
    "Gate",
    "GateDecision",
    "LLMGate",
    "LLMSummaryJudge",
    "OverlapJudge",
    "Recall",
    "RecallSource",
    "RuleGate",
    "SCMController",
    "SummaryJudge",
    "candidates_from",
]


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
