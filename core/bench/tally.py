"""One pipeline's per-question scores gathered into a row of figures: overall, per question
category, and the probe metrics of the categories that have one."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from ..read.when import named_period
from .metrics import CATEGORY_METRICS, METRICS, PROBES, RankedUnit, score_question
from .records import Question

CATEGORIES = "categories"
"""Row key of the per-category figures: category -> {"questions": n, metric: %}."""
NAMES_A_TIME = "(names a time)"
"""A row beside the categories: the questions of any category that name a time ("in
October 2023", "last summer"), which `read/when.py` serves."""


def percent(values: Sequence[float]) -> float:
    return 100 * float(np.mean(values)) if len(values) else float("nan")


class Tally:
    """Scores of one pipeline, question by question."""

    def __init__(self) -> None:
        self.scores: dict[str, list[float]] = defaultdict(list)
        self.categories: dict[str, dict[str, list[float]]] = defaultdict(
            lambda: defaultdict(list))
        self.probes: dict[str, list[float]] = defaultdict(list)

    def add(self, ranked: Sequence[RankedUnit], question: Question) -> None:
        """Score one question's ranking."""
        scores = score_question(ranked, question.evidence)
        category = str(question.category)
        for name, value in scores.items():
            self.scores[name].append(value)
        rows = [category]
        if named_period(question.question, datetime.now(timezone.utc)) is not None:
            rows.append(NAMES_A_TIME)
        for row in rows:
            for name in CATEGORY_METRICS:
                self.categories[row][name].append(scores[name])
        probe = PROBES.get(category)
        if probe is not None:
            self.probes[probe.column].append(
                probe.metric(ranked, *(question.side(s) for s in probe.sides)))

    def row(self) -> dict[str, Any]:
        """Percentages: every METRICS column, each probe column with its count of probes
        (`<column> probes`), and CATEGORIES."""
        return {**{name: percent(self.scores[name]) for name in METRICS},
                **{column: percent(values) for column, values in self.probes.items()},
                **{f"{column} probes": len(values) for column, values in self.probes.items()},
                CATEGORIES: {category: {"questions": len(values[CATEGORY_METRICS[0]]),
                                        **{n: percent(values[n]) for n in CATEGORY_METRICS}}
                             for category, values in sorted(self.categories.items(),
                                                            key=lambda kv: _order(kv[0]))}}


def _order(category: str) -> tuple[bool, bool, int, str]:
    """Numbered categories (LoCoMo) in number order, named ones (BEAM) by name, the
    questions naming a time last."""
    return (category == NAMES_A_TIME, not category.isdigit(),
            int(category) if category.isdigit() else 0, category)
