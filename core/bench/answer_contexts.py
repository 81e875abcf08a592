"""The contexts `rmm bench answer` gives the same reader: the memory's own (its search under
the adapters' word budget), plain passages ranked by BM25+dense fusion at the same budget
(the retrieval bench's baseline), and the whole conversation cut to the reader's window."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ..memory import ReflectiveMemory
from ..models.embed import Embedder, query_vectors
from ..read.ranked import CONTEXT_WORDS
from ..text import count_tokens
from .baselines import FixedUnits, build_units
from .metrics import fitting
from .records import Conversation, ingest

MEMORY_WORDS = CONTEXT_WORDS
"""Words of context per question: the budget the framework adapters give the memory."""
PASSAGES = "p60"
"""The passage unit (a key of baselines.UNITS): the best fixed unit by Rtok@1000 on LoCoMo."""
WINDOW_SHARE = 0.9
"""Share of the reader's window (less the prompt and the answer) the full conversation may
fill: `count_tokens` estimates, a model's tokenizer may count more."""


@dataclass(frozen=True, slots=True)
class Context:
    """The text a reader gets for one question, and its size."""

    text: str
    words: int
    tokens: int


def numbered(texts: list[str]) -> Context:
    """Recalled texts as the reader sees them: one `[n] text` line each, best first."""
    text = "\n".join(f"[{n}] {t}" for n, t in enumerate(texts, 1))
    return Context(text, sum(len(t.split()) for t in texts), count_tokens(text))


class MemoryContext:
    """The memory's context: each conversation ingested as one user (the default pipeline
    and `settings`), then `search` under the word budget, hits in rank order."""

    name = "memory"

    def __init__(self, embedder: Embedder, settings: dict[str, Any], max_words: int) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.mem = ReflectiveMemory.open(str(Path(self._tmp.name) / "answer.sqlite"),
                                         embedder=embedder, progress=False, **settings)
        self.max_words = max_words

    def prepare(self, conv: Conversation) -> None:
        ingest(self.mem, conv)

    def build(self, conv: Conversation, question: str) -> Context:
        hits = self.mem.search(question, user_id=conv.sample_id, max_words=self.max_words)
        return numbered([hit.text for hit in hits])

    def close(self) -> None:
        self.mem.close()
        self._tmp.cleanup()


class PassagesContext:
    """Plain passages (a fixed-size splitter's, within each turn), ranked by BM25 and dense
    retrieval fused, taken in rank order while they fit the same word budget (strict)."""

    name = "passages"

    def __init__(self, embedder: Embedder, max_words: int, unit: str = PASSAGES) -> None:
        self.embedder, self.max_words, self.unit = embedder, max_words, unit
        self._units: dict[str, FixedUnits] = {}

    def prepare(self, conv: Conversation) -> None:
        self._units[conv.sample_id] = build_units(conv, self.unit, self.embedder)

    def build(self, conv: Conversation, question: str) -> Context:
        units = self._units[conv.sample_id]
        order = units.rank("fused", question, query_vectors(self.embedder, [question])[0])
        ranked = [(units.texts[i], units.refs[i]) for i in order]
        taken, _ = fitting(ranked, self.max_words)
        return numbered([text for text, _ in ranked[:taken]])

    def close(self) -> None:
        self._units.clear()


class FullContext:
    """The whole conversation, session by session with its date, cut to its latest turns
    when it does not fit the reader's window of `window` tokens."""

    name = "full"

    def __init__(self, window: int, reserve: int) -> None:
        self.room = int((window - reserve) * WINDOW_SHARE)
        if self.room <= 0:
            raise InvalidInputError(f"a window of {window} tokens leaves no room for the "
                                    f"conversation after the prompt and the answer "
                                    f"({reserve} tokens)")

    def prepare(self, conv: Conversation) -> None:
        pass

    def build(self, conv: Conversation, question: str) -> Context:
        lines: list[str] = []
        for session in conv.sessions:
            when = f" ({session.started_at:%d %B %Y})" if session.started_at else ""
            lines.append(f"--- {session.session_id}{when}")
            lines += [turn.render() for turn in session.turns]
        kept, used = [], count_tokens(question)
        for line in reversed(lines):
            used += count_tokens(line) + 1
            if used > self.room:
                break
            kept.append(line)
        text = "\n".join(reversed(kept))
        return Context(text, len(text.split()), count_tokens(text))

    def close(self) -> None:
        pass


CONTEXTS = (MemoryContext.name, PassagesContext.name, FullContext.name)
"""What `--contexts` chooses from."""
