"""Reconciliation: Add each new memory, or Merge it into a stored one (RMM)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from ..config import DEFAULT_UNIT_WORDS
from ..models import prompts
from ..models.llm import metered
from ..models.parse import ParseError, ask, with_fallback
from ..types import Memory
from .session import Draft


@dataclass(frozen=True, slots=True)
class Decision:
    """Add draft `draft` (target None) or merge it into memory `target` with `text`; an
    add that `replaces` a stored memory supersedes it (RMM's update, LLM-judged)."""

    draft: int
    target: str | None = None
    text: str | None = None
    replaces: str | None = None
    judged: tuple[str, ...] = ()
    """The stored memories an LLM was shown beside this draft and answered for: whether
    the draft changes one of them is decided, by Update or by leaving them be."""


@dataclass(frozen=True, slots=True)
class Action:
    """One parsed reconciliation line: "merge" or "update" of stored memory `stored`."""

    kind: str
    stored: int
    text: str


@runtime_checkable
class Reconciler(Protocol):
    """Decides, for a batch of drafts, which are new and which update stored memories.

    `neighbours[i]` lists the stored memories most similar to draft i, with similarity.
    """

    def reconcile(self, drafts: Sequence[Draft],
                  neighbours: Sequence[Sequence[tuple[Memory, float]]]) -> list[Decision]: ...


class ThresholdReconciler:
    """Merge a draft into its nearest stored memory when they are near-duplicates.

    Raw-turn memories are only merged when almost the same (cosine >= `threshold`), about
    the same speakers, and the merged text (both texts, nothing paraphrased) still fits
    `max_words`.
    """

    def __init__(self, threshold: float = 0.92, *, max_words: int = 10**9) -> None:
        self.threshold, self.max_words = threshold, max_words

    def reconcile(self, drafts: Sequence[Draft],
                  neighbours: Sequence[Sequence[tuple[Memory, float]]]) -> list[Decision]:
        decisions: list[Decision] = []
        merged_text: dict[str, str] = {}
        for i, (draft, near) in enumerate(zip(drafts, neighbours)):
            memory = next((m for m, s in near
                           if s >= self.threshold and set(m.speakers) & set(draft.speakers)),
                          None)
            text = "" if memory is None else (
                merged_text.get(memory.id, memory.text) + "\n" + draft.text)
            if memory is None or len(text.split()) > self.max_words:
                decisions.append(Decision(i))
                continue
            merged_text[memory.id] = text
            decisions.append(Decision(i, memory.id, text))
        # a memory merged twice in one batch ends with the text of its last merge
        return [Decision(d.draft, d.target, merged_text[d.target]) if d.target else d
                for d in decisions]


# LLM reconciliation (RMM Add / Merge) --------------------------------------------------------
class LLMReconciler:
    """RMM's update step, batched: one call decides Add() or Merge(i, summary) for every
    new memory of a session that has similar stored memories about the same people.

    A new memory without such candidates (similarity below `min_similarity`, or about
    other speakers) is added without asking; no call is made when none has any. A new
    memory the answer skips is added; two merges into one stored memory keep both
    merged summaries. A merge whose text would pass `max_words` is an Add instead, so
    every memory still fits a hit and nothing is lost.
    """

    def __init__(self, llm: Any, fallback: Reconciler | None = None, *,
                 min_similarity: float = 0.3, max_words: int = DEFAULT_UNIT_WORDS) -> None:
        self.llm, self.min_similarity = metered(llm), min_similarity
        self.fallback = fallback or ThresholdReconciler(max_words=max_words)
        self.max_words = max_words

    def reconcile(self, drafts: Sequence[Draft],
                  neighbours: Sequence[Sequence[tuple[Memory, float]]]) -> list[Decision]:
        candidates = [[m for m, score in near if score >= self.min_similarity
                       and _same_people(m, draft)] for draft, near in zip(drafts, neighbours)]
        asked = [i for i, near in enumerate(candidates) if near]  # shown as N1, N2, ...
        if not asked:
            return [Decision(i) for i in range(len(drafts))]
        stored = list({m.id: m for i in asked for m in candidates[i]}.values())
        number = {m.id: k for k, m in enumerate(stored)}
        allowed = [{number[m.id] for m in candidates[i]} for i in asked]
        prompt = prompts.RECONCILE.format(max_words=self.max_words, new="\n\n".join(
            f"N{k + 1}: {drafts[i].text}\n  stored memories:\n"
            + "\n".join(f"    [{number[m.id]}] {m.text}" for m in candidates[i])
            for k, i in enumerate(asked)))
        actions = with_fallback(
            "reconciliation",
            lambda: ask(self.llm, prompt, lambda a: parse_actions(a, len(asked), len(stored),
                                                                  allowed)),
            lambda: None)
        if actions is None:
            return self.fallback.reconcile(drafts, neighbours)
        decided = _decisions(len(drafts), {asked[k]: a for k, a in actions.items()}, stored,
                             self.max_words)
        answered = {asked[k] for k in actions}
        return [replace(d, judged=tuple(m.id for m in candidates[d.draft]))
                if d.draft in answered else d for d in decided]


_ACTION = re.compile(r"^\W*N?\s*(\d+)\s*\W*\s*(add|merge|update)\s*\((.*)$", re.I)
_MERGE = re.compile(r"\s*\[?(\d+)\]?\s*,\s*(.*?)\s*\)\s*[.;]?\s*$", re.S)


def parse_actions(answer: str, n_new: int, n_stored: int,
                  allowed: list[set[int]] | None = None) -> dict[int, Action | None]:
    """`{draft: None (Add) | Action(merge or update, stored index, summary)}` from
    `N1: Add()` lines.

    Indices out of range are rejected. A merge or update of new memory i naming a stored
    memory outside `allowed[i]` (not listed under it), or one cut off before its closing
    parenthesis, is ignored: that memory is added instead, so nothing is lost.
    """
    actions: dict[int, Action | None] = {}
    for line in answer.splitlines():
        found = _ACTION.match(line.strip().strip("`*"))
        if not found:
            continue
        new = int(found.group(1))
        if not 1 <= new <= n_new:
            raise ParseError(f"N{new} is not a new memory; they are N1 to N{n_new}")
        if found.group(2).lower() == "add":
            actions[new - 1] = None
            continue
        merge = _MERGE.match(found.group(3))
        if not merge:
            continue
        target, text = int(merge.group(1)), merge.group(2).strip().strip("\"'")
        kind = found.group(2).lower()
        if not 0 <= target < n_stored:
            raise ParseError(f"{kind.title()}({target}, ...) names no stored memory; use 0 "
                             f"to {n_stored - 1}")
        if allowed is not None and target not in allowed[new - 1]:
            actions[new - 1] = None
            continue
        if text:
            actions[new - 1] = Action(kind, target, text)
    if not actions:
        raise ParseError("no action lines found; write one line per new memory such as "
                         "'N1: Add()', 'N1: Merge(0, merged summary)' or "
                         "'N1: Update(0, new summary)'")
    return actions


def _decisions(n: int, actions: dict[int, Action | None],
               stored: list[Memory], max_words: int) -> list[Decision]:
    merged: dict[str, list[str]] = {}
    for i, action in list(actions.items()):
        if action is None or action.kind != "merge":
            continue
        texts = merged.setdefault(stored[action.stored].id, [])
        if action.text in texts:
            continue
        if len(" ".join([*texts, action.text]).split()) > max_words:
            actions[i] = None  # too long to be one hit: kept as a memory of its own
        else:
            texts.append(action.text)
    out = []
    for i in range(n):
        action = actions.get(i)
        if action is None:
            out.append(Decision(i))
        elif action.kind == "update":  # a new memory in the LLM's words; the old one stays
            text = " ".join(action.text.split()[:max_words])
            out.append(Decision(i, text=text, replaces=stored[action.stored].id))
        else:
            target = stored[action.stored].id
            out.append(Decision(i, target, "\n".join(merged[target])))
    return out


def _same_people(memory: Memory, draft: Draft) -> bool:
    return not memory.speakers or not draft.speakers or bool(set(memory.speakers)
                                                             & set(draft.speakers))
