"""MemGPT / Letta working context: bounded core blocks per user, and a message queue with a
token budget that warns at ~70 % and, at 100 %, evicts its oldest messages into a recursive
summary. Evicted messages stay searchable in the turn log (recall storage); the memory bank
is the archival storage."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import InvalidInputError
from ..models import prompts
from ..models.llm import metered
from ..models.parse import with_fallback
from ..storage.compare_and_set import compare_and_set
from ..text import Counter, as_counter, content_words, non_empty
from ..types import Turn, check_count, check_id

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from ..storage.protocols import UserState

STATE_NAME = "working_context"


@dataclass(frozen=True, slots=True)
class BlockSpec:
    """A core block's definition: its size limit in characters and what it is for."""

    limit: int
    description: str


DEFAULT_BLOCKS: dict[str, BlockSpec] = {
    "human": BlockSpec(2000, "What you know about the user: name, life, preferences, plans."),
    "persona": BlockSpec(2000, "Who you are and how you speak and behave with this user."),
}


@dataclass(slots=True)
class Block:
    label: str
    value: str
    limit: int
    description: str


@dataclass(slots=True)
class QueueEvent:
    """What pushing a message did: the pressure notice when crossing the warning level, and
    the messages evicted into the summary when the budget was reached."""

    notice: str | None = None
    evicted: list[Turn] = field(default_factory=list)
    usage: float = 0.0


@dataclass(slots=True)
class _State:
    blocks: dict[str, Block]
    summary: str = ""
    messages: list[Turn] = field(default_factory=list)
    pressure: bool = False
    evicted: int = 0


# recursive summaries ------------------------------------------------------------------------
@runtime_checkable
class Summarizer(Protocol):
    """Folds evicted messages into the running summary, within `limit` units."""

    def summarize(self, previous: str, evicted: Sequence[Turn], limit: int,
                  count: Counter) -> str: ...


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


class ExtractiveSummarizer:
    """LLM-free: keeps the most informative sentences of the old summary and the evicted
    messages (names, numbers and content words score), in their original order."""

    def summarize(self, previous: str, evicted: Sequence[Turn], limit: int,
                  count: Counter) -> str:
        sentences = [s for s in _SENTENCE.split(previous) if s.strip()]
        for turn in evicted:
            sentences += [f"{turn.speaker}: {s.strip()}" for s in _SENTENCE.split(turn.text)
                          if s.strip()]
        ranked = sorted(range(len(sentences)), key=lambda i: (-_salience(sentences[i]), -i))
        keep, used = set(), 0
        for i in ranked:
            cost = count(sentences[i])
            if used + cost <= limit:
                keep.add(i)
                used += cost
        return "\n".join(sentences[i] for i in sorted(keep))


def _salience(sentence: str) -> float:
    words = content_words(sentence)
    names = re.findall(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+", sentence)
    numbers = re.findall(r"\d+", sentence)
    return len(words) + 2 * len(names) + 2 * len(numbers)




class LLMSummarizer:
    """MemGPT's recursive summary written by the LLM; on failure, or when the answer is too
    long, the extractive summary takes over (over the LLM's answer when there is one)."""

    def __init__(self, llm: Any, fallback: Summarizer | None = None) -> None:
        self.llm = metered(llm)
        self.fallback = fallback or ExtractiveSummarizer()

    def summarize(self, previous: str, evicted: Sequence[Turn], limit: int,
                  count: Counter) -> str:
        prompt = prompts.RECURSIVE_SUMMARY.format(limit=max(limit * 3 // 4, 1),
                                       previous=previous or "(empty)",
                                       messages="\n".join(t.render() for t in evicted))
        # never lose messages because the LLM failed: an empty answer means the fallback
        answer = with_fallback("summary", lambda: self.llm.complete(prompt).strip(),
                               lambda: "")
        if not answer:
            return self.fallback.summarize(previous, evicted, limit, count)
        if count(answer) > limit:
            return self.fallback.summarize(answer, [], limit, count)
        return answer


# the working context ------------------------------------------------------------------------
NOTICE = ("[memory pressure] The working context is at {pct:.0f}% of its budget. Save what "
          "matters to core memory (core_memory_append / core_memory_replace) or archival "
          "memory (archival_memory_insert) now: the oldest messages will soon be summarised "
          "and evicted.")


class Appender(Protocol):
    """Durably logs turns of a user's session and returns them as stored
    (`ReflectiveMemory.append`)."""

    def __call__(self, turns: Sequence[Turn | Mapping[str, Any]], *, user_id: str,
                 session_id: str) -> list[Turn]: ...


class WorkingContext:
    """One user's bounded working context, stored durably and changed only through its
    methods: `core_memory_append`, `core_memory_replace`, `add_message`.

    It needs only the pieces it uses: `append` logs each message (recall storage), `state`
    keeps the context, `llm` (optional) writes the recursive summary, `usage_for(user_id)` scopes
    the LLM usage to the user.

    `budget` is in `unit`s (tokens by default) and covers the blocks, the summary and the
    queued messages. At `warn_at` of it a pressure notice is raised once; at 100 % the oldest
    messages are folded into the summary until the total is at most `evict_to` of it.
    """

    def __init__(self, user_id: str, *, append: Appender, state: UserState, llm: Any = None,
                 usage_for: Callable[[str], AbstractContextManager[Any]] | None = None,
                 session_id: str = "working", budget: int = 4000, warn_at: float = 0.7,
                 evict_to: float = 0.5, summary_limit: int | None = None,
                 blocks: Mapping[str, BlockSpec] | None = None,
                 summarizer: Summarizer | None = None, unit: str | Counter = "tokens") -> None:
        self.append, self.state, self.usage_for = append, state, usage_for
        self.user_id = check_id(user_id, "user_id")
        self.session_id = check_id(session_id, "session_id")
        check_count(budget, "budget")
        if not 0 < evict_to < warn_at <= 1:
            raise InvalidInputError(f"need 0 < evict_to < warn_at <= 1, got evict_to="
                                    f"{evict_to!r}, warn_at={warn_at!r}")
        self.budget, self.warn_at, self.evict_to = budget, warn_at, evict_to
        self.count = as_counter(unit)
        self.summary_limit = summary_limit or max(budget // 5, 1)
        self.specs = dict(DEFAULT_BLOCKS if blocks is None else blocks)
        fixed = sum(self.count("x" * spec.limit) for spec in self.specs.values())
        if fixed + self.summary_limit >= evict_to * budget:
            raise InvalidInputError(
                f"blocks at their limits ({fixed}) plus the summary ({self.summary_limit}) "
                f"leave no room for messages under evict_to x budget "
                f"({evict_to * budget:.0f}); raise the budget or lower the block limits")
        if summarizer is None:
            summarizer = LLMSummarizer(llm) if llm is not None else ExtractiveSummarizer()
        self.summarizer = summarizer

    # reading ------------------------------------------------------------------------------------
    @property
    def blocks(self) -> dict[str, Block]:
        return self._load()[1].blocks

    @property
    def summary(self) -> str:
        return self._load()[1].summary

    @property
    def messages(self) -> list[Turn]:
        return list(self._load()[1].messages)

    def usage(self) -> float:
        """Share of the budget in use (1.0 = full)."""
        return self._size(self._load()[1]) / self.budget

    def render(self) -> str:
        """The working context as it goes into the LLM's prompt."""
        state = self._load()[1]
        parts = ["Core memory (edit with core_memory_append / core_memory_replace):"]
        for b in state.blocks.values():
            parts.append(f'<{b.label} chars="{len(b.value)}/{b.limit}">\n{b.value}\n'
                         f"</{b.label}>")
        if state.summary:
            parts.append(f"Summary of earlier messages (search them with "
                         f"conversation_search):\n{state.summary}")
        if state.messages:
            parts.append("Recent messages:\n" + "\n".join(t.render() for t in state.messages))
        if state.pressure:
            parts.append(NOTICE.format(pct=100 * self._size(state) / self.budget))
        return "\n\n".join(parts)

    # core memory edits -----------------------------------------------------------------------
    def core_memory_append(self, label: str, content: str) -> Block:
        """Add `content` as a new line of block `label`; the block must stay within its limit."""
        content = non_empty(content, "content")

        def edit(state: _State) -> Block:
            block = self._block(state, label)
            value = f"{block.value}\n{content}" if block.value else content
            return self._set(block, value)

        return self._update(edit)

    def core_memory_replace(self, label: str, old_content: str, new_content: str) -> Block:
        """Replace the exact text `old_content` of block `label` (empty `new_content` deletes)."""
        old_content = non_empty(old_content, "old_content")
        if not isinstance(new_content, str):
            raise InvalidInputError(f"new_content must be a string, not "
                                    f"{type(new_content).__name__}")

        def edit(state: _State) -> Block:
            block = self._block(state, label)
            if old_content not in block.value:
                raise InvalidInputError(f"{old_content!r:.80} is not in block {label!r}; "
                                        f"it holds {block.value!r:.200}")
            value = block.value.replace(old_content, new_content, 1)
            return self._set(block, re.sub(r"\n{2,}", "\n", value).strip())

        return self._update(edit)

    # the message queue ----------------------------------------------------------------------
    def add_message(self, turn: Turn | Mapping[str, Any]) -> QueueEvent:
        """Log the message durably (recall storage), then queue it; warn or evict as needed."""
        stored = self.append([turn], user_id=self.user_id, session_id=self.session_id)[0]

        def push(state: _State) -> QueueEvent:
            state.messages.append(stored)
            event = QueueEvent()
            if self._size(state) >= self.budget:
                event.evicted = self._evict(state)
                state.pressure = False
            if not state.pressure and self._size(state) >= self.warn_at * self.budget:
                state.pressure = True
                event.notice = NOTICE.format(pct=100 * self._size(state) / self.budget)
            event.usage = self._size(state) / self.budget
            return event

        if self.usage_for is None:
            return self._update(push)
        with self.usage_for(self.user_id):
            return self._update(push)

    def _evict(self, state: _State) -> list[Turn]:
        target = self.evict_to * self.budget
        fixed = self._size(_State(state.blocks)) + self.summary_limit
        n = 0
        while n < len(state.messages) - 1 and \
                fixed + sum(self.count(t.render()) for t in state.messages[n:]) > target:
            n += 1
        evicted, state.messages = state.messages[:n], state.messages[n:]
        if evicted:
            state.summary = self.summarizer.summarize(state.summary, evicted,
                                                      self.summary_limit, self.count)
            state.evicted += len(evicted)
        return evicted

    # internals ----------------------------------------------------------------------------
    def _size(self, state: _State) -> int:
        blocks = sum(self.count(b.value) for b in state.blocks.values())
        return blocks + self.count(state.summary) + \
            sum(self.count(t.render()) for t in state.messages)

    def _block(self, state: _State, label: Any) -> Block:
        if not isinstance(label, str) or label not in state.blocks:
            raise InvalidInputError(f"no core block {label!r}; blocks are {sorted(state.blocks)}")
        return state.blocks[label]

    @staticmethod
    def _set(block: Block, value: str) -> Block:
        if len(value) > block.limit:
            raise InvalidInputError(
                f"block {block.label!r} would hold {len(value)} characters; its limit is "
                f"{block.limit} ({block.limit - len(block.value)} left). Replace or shorten "
                f"older content first.")
        block.value = value
        return Block(block.label, value, block.limit, block.description)

    def _load(self) -> tuple[int, _State]:
        version, blob = self.state.load_user_state(self.user_id, STATE_NAME)
        blocks = {label: Block(label, "", s.limit, s.description)
                  for label, s in self.specs.items()}
        if blob is None:
            return version, _State(blocks)
        data = json.loads(blob)
        for label, b in data.get("blocks", {}).items():
            spec = self.specs.get(label)
            blocks[label] = Block(label, b["value"], spec.limit if spec else b["limit"],
                                  spec.description if spec else b["description"])
        return version, _State(blocks, data.get("summary", ""),
                               [Turn(**t) for t in data.get("messages", [])],
                               data.get("pressure", False), data.get("evicted", 0))

    def _update(self, change: Callable[[_State], Any]) -> Any:
        """Load, change, compare-and-set (retried when another writer got there first)."""
        return compare_and_set(
            self._load, lambda version, state: self.state.save_user_state(
                self.user_id, STATE_NAME, version, _dump(state)),
            change, what="the working context")


def _dump(state: _State) -> bytes:
    return json.dumps({
        "blocks": {label: asdict(b) for label, b in state.blocks.items()},
        "summary": state.summary,
        "messages": [{"speaker": t.speaker, "text": t.text, "id": t.id,
                      "session_id": t.session_id} for t in state.messages],
        "pressure": state.pressure, "evicted": state.evicted,
    }).encode()

