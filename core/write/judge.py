"""An LLM's verdict on what newly written memories change: one call per batch of written
memories (a reflected session, an `add`), over the changes the rules found and the nearest
earlier memories they passed over. Without an answer the rules' changes stand."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..config import MemoryConfig
from ..errors import InvalidInputError
from ..language.change import SURE
from ..language.dates import format_date
from ..models import prompts
from ..models.llm import metered
from ..models.parse import ParseError, ask, with_fallback
from ..types import FactChange, Memory

PASSED_OVER = 2
"""Nearest earlier memories per changing new memory shown beside the rules' findings."""
MAX_PAIRS = 16
"""Most pairs in one call: the prompt stays short enough for a small local model."""
VERDICTS = ("supersedes", "conflicts", "none")

_LINE = re.compile(r"^\W*P\s*(\d+)\s*[:.)\-]\s*\W*(supersedes|conflicts|none)\b", re.I)


def judge_for(config: MemoryConfig, llm: Any | None) -> ChangeJudge | None:
    """The judge `stages.judge_changes` asks for (None when it is off)."""
    if not config.stages.judge_changes:
        return None
    if llm is None:
        raise InvalidInputError("stages.judge_changes needs an LLM: pass llm= to "
                                "ReflectiveMemory.open, or leave it off")
    return ChangeJudge(llm)


class ChangeJudge:
    """Asks an LLM, in one call, which of the candidate pairs are changes."""

    def __init__(self, llm: Any) -> None:
        self.llm = metered(llm)

    def __call__(self, found: Sequence[FactChange], nearest: Mapping[str, Sequence[str]],
                 memories: Mapping[str, Memory]) -> list[FactChange]:
        """The changes to record: those the LLM finds among the rules' proposals (`found`,
        sure or not) and among `nearest` (new memory id -> earlier ids, nearest first).
        Where it gives no verdict, a proposal stands only if the rules are sure of it."""
        pairs = _pairs(found, nearest)
        if not pairs:
            return [c for c in found if _sure(c)]
        prompt = prompts.JUDGE_CHANGES.format(pairs="\n\n".join(
            f"P{k + 1}:\n  EARLIER ({_said(memories[old])}): {memories[old].text}\n"
            f"  LATER ({_said(memories[new])}): {memories[new].text}"
            for k, (old, new) in enumerate(pairs)))
        verdicts = with_fallback("supersession judge",
                                 lambda: ask(self.llm, prompt,
                                             lambda a: parse_verdicts(a, len(pairs))),
                                 lambda: None)
        if verdicts is None:
            return [c for c in found if _sure(c)]
        by_pair = {(c.old_id, c.new_id): c for c in found}
        asked = set(pairs)
        out = [c for c in found if (c.old_id, c.new_id) not in asked and _sure(c)]
        for k, (old, new) in enumerate(pairs):
            verdict, rules = verdicts.get(k), by_pair.get((old, new))
            if verdict is None:  # not answered: a sure proposal stands
                out += [rules] if rules and _sure(rules) else []
            elif rules is not None and rules.kind == verdict:  # confirmed: its part and words
                out.append(replace(rules, signals=("llm",)))
            elif verdict != "none":
                out.append(FactChange(old, new, memories[new].valid_from, verdict, None,
                                      memories[new].text if verdict == "supersedes" else None,
                                      ("llm",)))
        return out


def parse_verdicts(answer: str, n: int) -> dict[int, str]:
    """`{pair index: verdict}` from `P1: supersedes` lines; a pair left out keeps the rules'
    verdict. Lines for pairs that were not asked (a small model going on to "P2" when one
    pair was shown) are ignored; an answer with no verdict for any asked pair is an error
    (the LLM is asked again)."""
    verdicts: dict[int, str] = {}
    beyond = []
    for line in answer.splitlines():
        found = _LINE.match(line.strip().strip("`*"))
        if not found:
            continue
        k = int(found.group(1))
        if 1 <= k <= n:
            verdicts.setdefault(k - 1, found.group(2).lower())
        else:
            beyond.append(k)
    if not verdicts:
        raise ParseError(f"no verdict for P1 to P{n}" + (
            f" (P{beyond[0]} is not a pair)" if beyond else "") + "; write one line per pair "
            "such as 'P1: supersedes', 'P2: conflicts' or 'P3: none'")
    return verdicts


def _pairs(found: Sequence[FactChange], nearest: Mapping[str, Sequence[str]]
           ) -> list[tuple[str, str]]:
    """(old id, new id): the rules' findings first, then the passed-over nearest ones."""
    pairs = list(dict.fromkeys((c.old_id, c.new_id) for c in found))
    for new, olds in nearest.items():
        pairs += [(old, new) for old in olds[:PASSED_OVER] if (old, new) not in pairs]
    return pairs[:MAX_PAIRS]


def _sure(change: FactChange) -> bool:
    """Whether the rules alone would record it: a contradiction, or a change they are sure
    of (`language.change.SURE`)."""
    return change.kind != "supersedes" or change.confidence >= SURE


def _said(memory: Memory) -> str:
    return format_date(memory.valid_from)
