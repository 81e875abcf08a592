"""Retrieval metrics of DESIGN.md: R_any@k, R_all@k and the strict word-budgeted Rtok@B."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
    fit in what is left; a unit that does not fit ends the list, the first one too."""
    taken = words = 0
    for text, _ in ranked:
        size = len(text.split())
        if words + size > budget:
            break
        taken, words = taken + 1, words + size
    return taken, words


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
