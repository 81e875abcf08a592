"""The read steps: what orders the reranked window after the reranker, by what the
memories say about time and versions (`docs/concepts.md`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import numpy as np

from ..config import MemoryConfig
from ..models.cosines import cosine_scale
from ..types import MemoryHit
from .explain import ReadSteps
from .latest import latest_first
from .validity import about_the_past, arrange
from .when import named_period, prefer_period


def arranged(head: list[MemoryHit], query: str, as_of: datetime | None, steps: ReadSteps,
             query_vec: np.ndarray, rows: Mapping[str, np.ndarray],
             config: MemoryConfig, embedder: Any) -> list[MemoryHit]:
    """The reranked window in the order the read steps leave it: a named time's
    memories up, the latest value first, a successor before what it superseded, the
    asker's own answers before others' news, the newest version of a fact before its
    older ones (`rmm_core.read.versions`), and for a question that gathers, new turns
    first (`docs/concepts.md`). `steps` records the order after each step that changed it;
    `embedder` says on what scale its cosines are read and which languages their nearness
    means something in."""
    from .versions import answers_first, closeness, newest_first

    period = named_period(query, as_of or datetime.now(timezone.utc))
    if period is not None:
        head = prefer_period(head, period)
        steps.after("names a time", head)
    if config.supersession:
        now = as_of is None and not about_the_past(query)
        if now:
            head = latest_first(head, query, assistants=config.fusion.assistant_speakers)
            steps.after("latest value first", head)
        head = arrange(head, query=query, current_first=now, as_of=as_of)
        steps.after("successor first", head)
        scale = cosine_scale(embedder)
        close = closeness(head, query_vec, rows, scale)
        head = answers_first(head, query, close, now=now and period is None,
                             others=config.fusion.assistant_speakers)
        steps.after("answers first", head)
        # a named time asks about then, not now; with an LLM judge, what a new memory
        # changed was read when it was written (`stages.judge_changes`), not guessed here
        if now and period is None:
            head = newest_first(head, query, query_vec, rows,
                                others=config.fusion.assistant_speakers,
                                guess=not config.stages.judge_changes, close=close,
                                meaning=getattr(embedder, "languages", None), scale=scale)
            steps.after("newest version first", head)
    return head
