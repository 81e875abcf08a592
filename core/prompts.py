"""Prompts of the LLM write-path stages, in this project's own words.

They follow the papers' structure and output formats: RMM's per-speaker topic memories
(`{"summary", "reference"}` or `NO_TRAIT`) and its `Add()` / `Merge(i, summary)` actions,
SeCom's zero-shot segmentation into turn ranges and its incremental same-topic judgement.
Placeholders are `str.format` fields; literal braces are doubled.
"""

from __future__ import annotations

NO_TRAIT = "NO_TRAIT"

EXTRACT = """You keep long-term notes about the people in a conversation.
Read the session below and note what it reveals about each speaker personally: facts about
their life, work, family and friends, plans, events they took part in, likes and dislikes,
opinions and feelings. Put closely related details into one topic memory; make a separate
memory for each distinct topic.

Rules:
- Write each memory as one or two plain sentences that begin with the speaker's name, at
  most {max_words} words.
- Turn relative time words ("yesterday", "last week", "next month") into calendar dates
  counted from the session date. If the session date is unknown, keep the words as they are.
- "reference" lists the numbers (in square brackets) of the turns the memory comes from.
- When a speaker reveals nothing personal, give "{no_trait}" for that speaker instead of a list.
- Answer with a single JSON object and nothing else. Its keys are exactly: {speakers}.

Format example (other names, other facts):
{{"Maya": [{{"summary": "Maya started a pottery class on 3 March 2023.", "reference": [0, 2]}}],
 "Tom": "{no_trait}"}}

Session date: {date}
{topics}Session:
{turns}
"""

RECONCILE = """You keep a bank of memories about people up to date.
Each NEW memory below comes from the latest session and is followed by the STORED memories
of the bank most similar to it. For each new memory choose one action:
- Add() when it tells something its stored memories do not already hold;
- Merge(i, merged summary) when it is about the same person and topic as stored memory [i].
  Write one summary of at most {max_words} words that combines both and keeps every name,
  number and date; when they conflict, state the newer information and note the change.

{new}

Answer with exactly one line per new memory and nothing else, each line in one of the
two forms below, with the memory's own number, and for Merge the number in square brackets
of the stored memory it merges into:
N<number>: Add()
N<number>: Merge(<stored number>, <merged summary>)
"""

SEGMENT = """Split the conversation below into topically coherent segments. A segment is a
run of consecutive turns about one topic; a new segment begins where the topic changes.
Turns are numbered 0 to {last}. Every turn belongs to exactly one segment, in order.

Conversation:
{turns}

Answer with a JSON list and nothing else, one object per segment, for example:
[{{"start": 0, "end": {mid}, "topic": "weekend hiking trip"}},
 {{"start": {after}, "end": {last}, "topic": "new job"}}]
"""

CONTINUES = """The turns below form the current segment of a conversation; they are about
one topic.
{segment}

Next turn:
{turn}

Does the next turn stay on the same topic as the segment? Answer with one word: yes or no.
"""

REPAIR = """Your previous answer could not be used: {problem}

The task was:
{prompt}
Your previous answer was:
{answer}

Answer the task again. Follow the required format exactly and write nothing else.
"""


def numbered_turns(turns: list, positions: list[int] | None = None) -> str:
    """Turns as prompt lines `[i] speaker: text`, i being the turn's position in the session."""
    positions = list(range(len(turns))) if positions is None else positions
    return "\n".join(f"[{i}] {turns[i].render()}" for i in positions)
