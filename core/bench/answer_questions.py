"""Which questions `rmm bench answer` asks, and how each is graded: LoCoMo's and your own
against their gold answer, BEAM's probes by their rubric (the types an LLM judge grades)."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidInputError
from .records import Conversation, Question

BEAM_UNJUDGED = frozenset({"event_ordering", "abstention"})
"""BEAM types not graded by an LLM against a rubric: event ordering is scored by the order of
the items named, abstention probes name no evidence (the loader leaves them out)."""
_QUESTION_FILES = ("probing_questions.json", "probing_questions/probing_questions.json")


@dataclass(frozen=True, slots=True)
class Item:
    """One question to ask: where it comes from and how it is graded."""

    conv: Conversation
    index: int
    question: Question
    rubric: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """Stable across runs: the conversation, the position and a digest of the text."""
        digest = hashlib.sha1(self.question.question.encode()).hexdigest()[:8]
        return f"{self.conv.sample_id}#{self.index}:{digest}"

    @property
    def category(self) -> str:
        return str(self.question.category)


def items(dataset: str, data: str | Path, convs: list[Conversation], limit: int | None,
          seed: int = 0) -> list[Item]:
    """The questions to ask, those with a gold answer or a rubric to grade against: all of
    them in conversation order, or `limit` drawn (with
    `seed`) in turn from each category so that every category is equally represented while
    it has questions left."""
    rubrics = beam_rubrics(data, convs) if dataset == "beam" else {}
    found = []
    for conv in convs:
        for index, q in enumerate(conv.questions):
            rubric = rubrics.get((conv.sample_id, q.question), ())
            if (dataset == "beam" and (q.category in BEAM_UNJUDGED or not rubric)) or \
                    not (rubric or q.answer.strip()):
                continue  # nothing to grade the answer against
            found.append(Item(conv, index, q, rubric))
    if limit is None or limit >= len(found):
        return found
    if limit < 1:
        raise InvalidInputError(f"--limit must be at least 1, got {limit}")
    return _spread(found, limit, seed)


def _spread(found: list[Item], limit: int, seed: int) -> list[Item]:
    """`limit` items, one category after another in turn, each category's in a seeded
    random order, in the order drawn: a run stopped early is still a balanced sample."""
    rng = random.Random(seed)
    by_category: dict[str, list[Item]] = {}
    for item in found:
        by_category.setdefault(item.category, []).append(item)
    queues = [by_category[c] for c in sorted(by_category)]
    for queue in queues:
        rng.shuffle(queue)
    chosen: list[Item] = []
    while len(chosen) < limit:
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop())
    return chosen


def beam_rubrics(data: str | Path, convs: list[Conversation]
                 ) -> dict[tuple[str, str], tuple[str, ...]]:
    """(conversation, question) -> the probe's rubric items, read beside the chats (the
    loader keeps no rubric)."""
    root = Path(data)
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for conv in convs:
        folder = root if (root / "chat.json").is_file() else \
            root / conv.sample_id.removeprefix("beam-")
        path = next((folder / name for name in _QUESTION_FILES if (folder / name).is_file()),
                    None)
        if path is None:
            raise InvalidInputError(f"no probing_questions.json in {folder}")
        for probes in json.loads(path.read_text()).values():
            for probe in probes:
                rubric = probe.get("rubric") or ()
                out[(conv.sample_id, probe["question"])] = tuple(map(str, rubric))
    return out
