"""Every prompt the library sends to an LLM, in this project's own words.

They follow the papers' structure and output formats: RMM's per-speaker topic memories
(`{"summary", "reference"}` or `NO_TRAIT`) and its `Add()` / `Merge(i, summary)` actions,
SeCom's zero-shot segmentation into turn ranges and its incremental same-topic judgement;
then the read side and the options (citations, SCM, MemGPT, A-MEM, Agent Workflow Memory).
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
- Merge(i, merged summary) when it is about the same person and topic as stored memory [i]
  and adds to it. Write one summary of at most {max_words} words that combines both and
  keeps every name, number and date.
- Update(i, new summary) when it says that what stored memory [i] says is no longer true:
  the person moved, changed jobs, sold the car, a date or amount changed, a habit or
  preference stopped. People mention what they already said many times for every time it
  changes: a complaint, a story or a question about the same thing, a one-off exception, a
  short trip or absence, a plan, an offer or a choice weighed and dropped, someone else's
  news are Add or Merge, never Update; when unsure, not Update. Write one summary of at
  most {max_words} words of what is true now, naming what it replaces and when it changed;
  the stored memory is kept as the past.

{new}

Answer with exactly one line per new memory and nothing else, each line in one of the
three forms below, with the memory's own number, and for Merge and Update the number in
square brackets of the stored memory it concerns:
N<number>: Add()
N<number>: Merge(<stored number>, <merged summary>)
N<number>: Update(<stored number>, <new summary>)
"""

JUDGE_CHANGES = """You keep a bank of memories about people true to the present.
Each pair below shows an EARLIER memory and a LATER one, with the day each was said. Decide
what the LATER memory does to the EARLIER one:
- supersedes: the LATER one says that something the EARLIER one states is no longer true
  (the person moved, changed jobs, sold the car, a date, time, amount or count changed, a
  habit or preference stopped);
- conflicts: both cannot be true, and nothing says one replaced the other;
- none: both can still hold. People mention what they already said many times for every
  time it changes: a complaint, a story or a question about the same thing, a one-off
  exception, a short trip or absence, a plan, an offer or a choice weighed and dropped, a
  wish, someone else's news, the same fact in other words are all none.
Answer supersedes only when the LATER memory itself says the change; when unsure, none.

{pairs}

Answer with exactly one line per pair and nothing else, each in the form
P<number>: supersedes
P<number>: conflicts
P<number>: none
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


# RMM's retrospective reflection: answer with [i] citations or [NO_CITE]
CITE = """You are a personal assistant with notes from earlier conversations with the \
user. Use them to answer the question below.

Notes, numbered:
{memories}

Question: {query}

Write a short, direct answer. Right after any statement that relies on a note, put that \
note's number in square brackets, such as [2] or [1][3]. Number only notes you really used. \
If no note helped, still answer as best you can and finish with [NO_CITE]."""


# SCM's memory gate: does the message need long-term memory?
GATE = """You decide whether an assistant must look into its long-term memory of past
conversations with this user before it answers. Memory is needed when the message refers to
earlier conversations, asks about the user's life, people, plans or preferences, or can only be
answered well by knowing them. It is not needed for greetings, thanks, general knowledge or
anything the current exchange already settles.

Previous turn: {previous}
New message: {query}

Answer with one word: YES or NO."""


# SCM's summary-or-full judgement
SUMMARY_SUFFICES = """A question is to be answered from a memory. The memory exists as a short
summary and as the full original conversation turns. Is the summary alone enough to answer the
question as well as the full turns would?

Question: {query}

Summary:
{summary}

Answer with one word: YES or NO."""


# MemGPT's recursive summary of evicted messages
RECURSIVE_SUMMARY = """You maintain a running summary of a conversation whose oldest messages no
longer fit in the assistant's context. Rewrite the summary so that it also covers the messages
below. Keep names, numbers, dates, decisions and open questions; drop greetings and filler.
Stay under {limit} words. Answer with the summary only.

Current summary:
{previous}

Messages leaving the context:
{messages}"""


# A-MEM's note construction
NOTES = """You file memory notes so that they can be found again later.
For every numbered note below write:
- "keywords": 3 to 6 specific words or short phrases from the note (people, things, places,
  events, dates);
- "tags": 2 to 4 broad categories the note belongs to (such as "family", "career", "travel");
- "context": one sentence saying what the note is about and why it may matter later.

Answer with one JSON list and nothing else: one object per note, in the order given, like
[{{"note": 0, "keywords": ["pottery class", "March 2023"], "tags": ["hobbies"],
  "context": "Maya describes starting a pottery class."}}]

Notes:
{notes}
"""


# A-MEM's link generation and memory evolution
LINKS = """You keep a network of linked memory notes. A NEW note has just been stored;
below it are the stored notes most similar to it, numbered.
1. Choose the stored notes that are really related to the new note (the same people, event,
   plan or topic, or one explains the other) and should be linked to it.
2. A linked note's context and tags may need to change now that the new note exists (for
   example a plan that is now done, or a topic that turned out broader). For each such note,
   give its new one-sentence context and its new tags. Leave out notes that need no change.

Answer with one JSON object and nothing else, like
{{"links": [0, 2], "updates": [{{"note": 0, "context": "...", "tags": ["...", "..."]}}]}}
and with {{"links": [], "updates": []}} when nothing is related.

NEW note:
{new}

STORED notes:
{stored}
"""


# Agent Workflow Memory's induction
INDUCE_WORKFLOWS = """You turn records of an agent's successful task runs into reusable
workflows. A workflow captures a routine that recurs across tasks, not one particular task.

For each routine you find, write:
- "description": one sentence saying what kind of task the workflow accomplishes;
- "steps": the actions in order, each a short instruction. Replace every concrete value of
  a particular task (names, numbers, dates, search terms, ids, addresses) with a
  placeholder in curly braces that says what goes there, such as {{city}} or {{order_id}}.
Leave out steps that only fixed mistakes. Merge runs that follow the same routine.

Answer with one JSON list and nothing else, like
[{{"description": "Book a table at a restaurant", "steps": ["Search for {{restaurant}}",
  "Open the booking form", "Pick {{date}} and {{party_size}}", "Confirm the booking"]}}]

Runs:
{runs}
"""


# Agent Workflow Memory's success judgement
TASK_SUCCEEDED = """Below is the record of an agent working on a task. Judge from the record
alone whether the agent accomplished the task. Answer with one word: yes or no.

{run}
"""


# `rmm bench answer`: a reader answers from a context, a judge grades the answer against the
# gold one (LoCoMo's J score: CORRECT or WRONG; BEAM: each rubric item met or not)
READ_AND_ANSWER = """Below are excerpts recalled from earlier conversations. Use them to \
answer the question that follows them.

Excerpts:
{context}

Question: {question}

Answer in a few words, or in one or two sentences when the question needs more; write \
nothing but the answer. When an excerpt dates what it says, turn relative time words \
("last week", "yesterday") into calendar dates counted from that date. If the excerpts do \
not hold the answer, give your best guess from them."""

GRADE_ANSWER = """You grade an answer to a question about past conversations by comparing \
it with the reference answer.

Question: {question}
Reference answer: {gold}
Answer to grade: {answer}

Grade it CORRECT when it says what the reference answer says, even in other words, at \
another length or with extra detail that does not contradict it; a date, time or period \
counts as the same when it names the same day, month or span in any format. Grade it WRONG \
when it misses, contradicts or changes what the reference answer says, or gives no answer.{guidance}

Reply with one word: CORRECT or WRONG."""

GRADE_RUBRIC = """You check one requirement on an answer given by an assistant that \
remembers its past conversations with the user.

Question: {question}
Answer to check: {answer}
Requirement: {item}

Reply with one word: MET when the answer fully satisfies the requirement, PARTLY when it \
satisfies part of it, MISSED when it does not."""


def numbered_turns(turns: list, positions: list[int] | None = None) -> str:
    """Turns as prompt lines `[i] speaker: text`, i being the turn's position in the session."""
    positions = list(range(len(turns))) if positions is None else positions
    return "\n".join(f"[{i}] {turns[i].render()}" for i in positions)
