"""SCM's activation gate: does an input need long-term memory at all? Rules (small talk
skips, references to the past recall, else a similarity probe) or the LLM's yes/no."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..models import prompts
from ..models.llm import metered
from ..models.parse import ask_yes_no
from ..text import content_words


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
