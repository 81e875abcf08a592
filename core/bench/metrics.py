"""Retrieval metrics of DESIGN.md: R_any@k, R_all@k and the strict word-budgeted Rtok@B, and
two probe metrics on evidence in named parts (update first, both sides)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from ..read.ranked import fitting as fit

RankedUnit = tuple[str, Sequence[str]]
"""A retrieved unit as measured: (text put into context, ids of its source turns)."""

BUDGETS = (500, 1000, 2000, 4000)
"""Word budgets B of the Rtok@B columns."""


def r_any(ranked: Sequence[RankedUnit], gold: Iterable[str], k: int) -> float:
    """1 when some gold turn is among the refs of the top k units."""
    gold = set(gold)
    return float(any(gold & set(refs) for _, refs in ranked[:k]))


def r_all(ranked: Sequence[RankedUnit], gold: Iterable[str], k: int) -> float:
    """1 when every gold turn is among the refs of the top k units."""
    gold = set(gold)
    covered = set().union(*(set(refs) for _, refs in ranked[:k])) if ranked else set()
    return float(gold <= covered)


def fitting(ranked: Sequence[RankedUnit], budget: int) -> tuple[int, int]:
    """(units, words) a context of `budget` words takes: units in rank order while their words
    fit in what is left (`rmm_core.read.ranked.fitting`, the search's own rule)."""
    return fit((len(text.split()) for text, _ in ranked), budget)


def r_tok(ranked: Sequence[RankedUnit], gold: Iterable[str], budget: int) -> float:
    """Share of gold turns covered by the units `fitting` takes within `budget` words (so an
    oversized unit earns nothing: a session-sized unit costs every word it holds)."""
    gold = set(gold)
    taken, _ = fitting(ranked, budget)
    covered = set().union(*(gold & set(refs) for _, refs in ranked[:taken]))
    return len(covered) / len(gold) if gold else 0.0


def words_in(ranked: Sequence[RankedUnit], budget: int) -> int:
    """Words actually taken by `r_tok` under the same rule."""
    return fitting(ranked, budget)[1]


METRICS = ("R_any@1", "R_any@5", "R_any@10", "R_all@5", *(f"Rtok@{b}" for b in BUDGETS))


def score_question(ranked: Sequence[RankedUnit], gold: Iterable[str]) -> dict[str, float]:
    """Every metric of the benchmark table for one question."""
    gold = frozenset(gold)
    return {
        "R_any@1": r_any(ranked, gold, 1),
        "R_any@5": r_any(ranked, gold, 5),
        "R_any@10": r_any(ranked, gold, 10),
        "R_all@5": r_all(ranked, gold, 5),
        **{f"Rtok@{b}": r_tok(ranked, gold, b) for b in BUDGETS},
    }


CATEGORY_METRICS = ("R_any@5", "Rtok@1000", "Rtok@2000")
"""The columns reported per question category."""

PROBE_BUDGET = 1000
"""Words of context the probe metrics look at (strict, as Rtok)."""


def _in_context(ranked: Sequence[RankedUnit], budget: int) -> list[set[str]]:
    """Refs of each hit that `fitting` takes within `budget` words, in rank order."""
    taken, _ = fitting(ranked, budget)
    return [set(refs) for _, refs in ranked[:taken]]


def update_first(ranked: Sequence[RankedUnit], original: Iterable[str], updated: Iterable[str],
                 budget: int = PROBE_BUDGET) -> float:
    """1 when, in rank order of the hits that fit `budget`, an updated turn comes before any
    original one: a reader meets the new fact first. A hit holding both counts (its turns
    are in order, the update last); a turn that is both original and updated counts as the
    update; no updated turn in the budget counts 0."""
    updated = set(updated)
    original = set(original) - updated
    for refs in _in_context(ranked, budget):
        if refs & updated:
            return 1.0
        if refs & original:
            return 0.0
    return 0.0


def both_sides(ranked: Sequence[RankedUnit], first: Iterable[str], second: Iterable[str],
               budget: int = PROBE_BUDGET) -> float:
    """1 when a turn of each of two contradicting statements is in the hits that fit
    `budget`: a reader can see the contradiction."""
    covered = set().union(*_in_context(ranked, budget))
    return float(bool(covered & set(first)) and bool(covered & set(second)))


class Probe(NamedTuple):
    """A metric on the two named parts of a probe's evidence."""

    column: str
    metric: Callable[[Sequence[RankedUnit], Iterable[str], Iterable[str]], float]
    sides: tuple[str, str]


PROBES: dict[str, Probe] = {
    "knowledge_update": Probe(f"update first@{PROBE_BUDGET}", update_first,
                              ("original_info", "updated_info")),
    "contradiction_resolution": Probe(f"both sides@{PROBE_BUDGET}", both_sides,
                                      ("first_statement", "second_statement")),
}
"""Question category (BEAM's probe types) -> its probe metric and the parts it reads."""
