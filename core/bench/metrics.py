"""Retrieval metrics of DESIGN.md: R_any@k, R_all@k and the word-budgeted Rtok@B."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

RankedUnit = tuple[str, Sequence[str]]
"""A retrieved unit as measured: (text put into context, ids of its source turns)."""


def r_any(ranked: Sequence[RankedUnit], gold: Iterable[str], k: int) -> float:
    """1 when some gold turn is among the refs of the top k units."""
    gold = set(gold)
    return float(any(gold & set(refs) for _, refs in ranked[:k]))


def r_all(ranked: Sequence[RankedUnit], gold: Iterable[str], k: int) -> float:
    """1 when every gold turn is among the refs of the top k units."""
    gold = set(gold)
    covered = set().union(*(set(refs) for _, refs in ranked[:k])) if ranked else set()
    return float(gold <= covered)


def r_tok(ranked: Sequence[RankedUnit], gold: Iterable[str], budget: int) -> float:
    """Share of gold turns covered by units taken in rank order within `budget` words.

    The first unit is always taken; a later unit that would push the total past the
    budget ends the list (so a session-sized unit costs every word it holds).
    """
    gold = set(gold)
    covered: set[str] = set()
    words = 0
    for text, refs in ranked:
        size = len(text.split())
        if words and words + size > budget:
            break
        covered |= gold & set(refs)
        words += size
        if words >= budget:
            break
    return len(covered) / len(gold) if gold else 0.0


def words_in(ranked: Sequence[RankedUnit], budget: int) -> int:
    """Words actually taken by `r_tok` under the same rule."""
    words = 0
    for text, _ in ranked:
        size = len(text.split())
        if words and words + size > budget:
            break
        words += size
        if words >= budget:
            break
    return words


METRICS = ("R_any@1", "R_any@5", "R_any@10", "R_all@5", "Rtok@500", "Rtok@1000", "Rtok@2000")


def score_question(ranked: Sequence[RankedUnit], gold: Iterable[str]) -> dict[str, float]:
    """Every metric of the benchmark table for one question."""
    gold = frozenset(gold)
    return {
        "R_any@1": r_any(ranked, gold, 1),
        "R_any@5": r_any(ranked, gold, 5),
        "R_any@10": r_any(ranked, gold, 10),
        "R_all@5": r_all(ranked, gold, 5),
        "Rtok@500": r_tok(ranked, gold, 500),
        "Rtok@1000": r_tok(ranked, gold, 1000),
        "Rtok@2000": r_tok(ranked, gold, 2000),
    }
