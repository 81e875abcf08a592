"""Attribution: which retrieved memories an answer used (the reranker's reward signal).

Two implementations, one result type: an LLM answers with numbered citations (RMM's
answer-and-cite step), or, for answers produced elsewhere, word overlap between the answer
and each memory decides (LLM-free).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ..errors import FeedbackError, InvalidInputError
from ..models import prompts
from ..models.llm import LLM
from ..text import content_words
from ..types import Memory, MemoryHit, SearchResult

NO_MEMORIES = "(no notes)"

# "[2]", "[1, 3]", "[1][3]", "[Note 2]", "[#2]", "[2 and 4]"
_CITATION = re.compile(r"\[\s*(?:notes?|memory|memories|mem|#)?\s*#?"
                       r"(\d{1,3}(?:\s*(?:,|;|and|&|\s)\s*#?\d{1,3})*)\s*\]", re.IGNORECASE)
_NO_CITE = re.compile(r"\[\s*no[\s_-]?cite\s*\]", re.IGNORECASE)


@dataclass(slots=True, repr=False)
class CitedAnswer:
    """An answer, the hits it cited, and the search it came from (raw keeps the markers)."""

    answer: str
    cited: list[MemoryHit]
    result: SearchResult
    raw: str = ""

    @property
    def cited_ids(self) -> list[str]:
        return [hit.memory.id for hit in self.cited]

    def __repr__(self) -> str:  # the answer and what it cited, not every memory's history
        answer = self.answer if len(self.answer) <= 200 else self.answer[:199] + "…"
        return (f"CitedAnswer(answer={answer!r}, cited={self.cited_ids!r}, "
                f"hits={len(self.result.hits)})")

    @property
    def memories(self) -> list[Memory]:
        return [hit.memory for hit in self.cited]


def citation_prompt(query: str, hits: list[MemoryHit]) -> str:
    """The answer-with-citations prompt: memories numbered from 1 in rank order."""
    listed = "\n".join(f"[{i}] {hit.text}" for i, hit in enumerate(hits, start=1))
    return prompts.CITE.format(memories=listed or NO_MEMORIES, query=query.strip())


def parse_citations(text: str, n: int) -> list[int]:
    """1-based note numbers cited in `text`, first-seen order; numbers outside 1..n (a year,
    a hallucinated note) are ignored, and `[NO_CITE]` alone means none."""
    seen: list[int] = []
    for match in _CITATION.finditer(text):
        for number in re.findall(r"\d+", match.group(1)):
            i = int(number)
            if 1 <= i <= n and i not in seen:
                seen.append(i)
    return seen


def strip_citations(text: str, n: int) -> str:
    """The answer without citation markers that point at notes 1..n or say NO_CITE."""
    def drop(match: re.Match) -> str:
        numbers = [int(x) for x in re.findall(r"\d+", match.group(1))]
        return "" if all(1 <= i <= n for i in numbers) else match.group(0)

    text = _NO_CITE.sub("", _CITATION.sub(drop, text))
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def answer_with_citations(llm: LLM, query: str, result: SearchResult) -> CitedAnswer:
    """Ask the LLM to answer from the result's hits and read which ones it cited."""
    hits = list(result.hits)
    raw = llm.complete(citation_prompt(query, hits))
    if not isinstance(raw, str):
        raise InvalidInputError(f"the llm returned {type(raw).__name__}, not text")
    cited = [hits[i - 1] for i in parse_citations(raw, len(hits))]
    return CitedAnswer(strip_citations(raw, len(hits)), cited, result, raw)


def cite_and_learn(llm: LLM, query: str, result: SearchResult,
                   feedback: Callable[[SearchResult, list[str]], None],
                   usage: AbstractContextManager[Any]) -> CitedAnswer:
    """RMM's loop after the search: answer citing `result`'s hits (the LLM's use counted in
    `usage`), then one `feedback` step from what it cited. A refused step only warns."""
    with usage:
        answer = answer_with_citations(llm, query, result)
    if result.hits:
        try:
            feedback(result, answer.cited_ids)
        except FeedbackError as exc:  # the answer stands; only its learning step is refused
            warnings.warn(str(exc), RuntimeWarning, stacklevel=3)
    return answer


def cite_by_overlap(answer: str, result: SearchResult, *, min_coverage: float = 0.5,
                    stemmer: Callable | None = None) -> CitedAnswer:
    """LLM-free attribution: cite each hit holding at least `min_coverage` of the answer's
    content words (dates in a hit's text count, so "7 May 2023" finds its memory)."""
    if not isinstance(answer, str):
        raise InvalidInputError(f"answer must be a string, not {type(answer).__name__}")
    if not 0.0 < min_coverage <= 1.0:
        raise InvalidInputError(f"min_coverage must be in (0, 1], got {min_coverage!r}")
    wanted = content_words(answer, stemmer)
    cited = []
    if wanted:
        for hit in result.hits:
            shared = wanted & content_words(hit.text, stemmer)
            if len(shared) / len(wanted) >= min_coverage:
                cited.append(hit)
    return CitedAnswer(answer.strip(), cited, result, answer)


def cited_in(answer: str, result: SearchResult) -> list[str]:
    """Memory ids an answer cites by number (as listed in `context.numbered_block`)."""
    hits = list(result.hits)
    return [hits[i - 1].memory.id for i in parse_citations(answer, len(hits))]
