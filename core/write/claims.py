"""A memory's sentences read as claims: whose they are, what they are about, the values they
state, and whether they say something changed. The supersession rules compare these.

LLM-free and English-only: a closed vocabulary of change cues, negations and single-valued
attributes (where one lives, one's job, diet, partner), and values found by shape (numbers
with their units, dates, names, "as a <role>").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import STOP_WORDS as STOPWORDS

_SPEAKER = re.compile(r"^([^\s:][^:\n]{0,40}):\s+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\s*\n\s*|\s+(?:but|however|though|whereas)\s+",
                       re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d[\d,.:/]*%?")
_DATE_NOTE = re.compile(r"\s*\((?:the week of )?[^()]*\d{4}\)")
"""What `timeref.ground` adds after a relative time: the claim reads the words as said."""

MONTHS = ("january february march april may june july august september october november "
          "december jan feb mar apr jun jul aug sep sept oct nov dec").split()

CUES = re.compile(
    r"\b(?:now|no longer|not any ?more|any ?more|actually|instead|changed?|switch(?:ed)?|"
    r"moved|relocated|resched\w*|postponed|pushed (?:back|out)|delayed|brought forward|"
    r"updated?|new|newly|recently|latest|currently|these days|nowadays|increased|"
    r"decreased|raised|lowered|reduced|dropped|grown|grew|went (?:up|down)|gone (?:up|down)|"
    r"adjusted|revised|extended|shortened|bumped|upped|quit|left|stopped|gave up|given up|"
    r"became|become|started|turned|got (?:a|an|my) new|cancel+ed|correction|scratch that|"
    r"from now on|going forward|at this point|so far|total of|reached|up to|down to)\b",
    re.IGNORECASE)
"""Words that say a fact is new or has changed."""

ENDED = re.compile(r"\b(?:no longer|not any ?more|n't \w+ any ?more|stopped|quit|gave up|"
                   r"given up|left|cancel+ed)\b", re.IGNORECASE)
"""A state that ended: a change by itself, with no new value needed."""

NEVER = re.compile(r"\b(?:never|not once|not ever|n't ever|none|nobody|no one)\b|"
                   r"\b(?:have|has|had|do|does|did)(?:n't| not)\b", re.IGNORECASE)
"""A denial: with no change cue, it contradicts the positive claim rather than updating it."""

HYPOTHETICAL = re.compile(
    r"\b(?:might|may|maybe|perhaps|could|would|should|if|whether|wish|someday|one day|"
    r"dream|imagine|what if|in case|unless|ask(?:ed|ing)? (?:me|you)|do you|did you|"
    r"are you|is it|can you|could you|will you)\b|\?\s*$", re.IGNORECASE)
"""Conditions, wishes and questions: they state no fact that could replace one."""

PLAN = re.compile(r"\b(?:thinking (?:about|of)|considering|plan(?:ning)? to|hope to|"
                  r"hoping to|want to|wanna|going to|gonna)\b", re.IGNORECASE)
"""Plans: hypothetical unless the sentence also says something changed ("I want to make
sure my new quota of 1,200 is met" states the new quota)."""

FAMILIES = {
    "residence": "live lives living lived moved move moving relocated relocate based home "
                 "apartment flat house city address neighborhood neighbourhood hometown",
    "job": "work works working job position role employer company hired career profession "
           "occupation employed",
    "schedule": "scheduled schedule rescheduled reschedule meeting appointment webinar call "
                "event deadline due date launch release postponed session booked",
    "diet": "diet eat eating eats vegan vegetarian pescatarian meat food allergic keto",
    "partner": "married dating partner girlfriend boyfriend wife husband single divorced "
               "engaged fiance fiancee",
    "preference": "like likes love loves prefer prefers favorite favourite enjoy enjoys hate "
                  "hates fan",
}
_FAMILY_OF = {w: name for name, ws in FAMILIES.items() for w in ws.split()}
STATES = frozenset("vegan vegetarian pescatarian keto meat married single divorced engaged "
                   "dating retired unemployed freelance remote".split())
"""Words that are themselves the value of an attribute ("I'm vegetarian")."""
SINGLE_VALUED = frozenset({"residence", "job", "diet", "partner"})
"""Attributes a person has one value of at a time: a new value replaces the old without
needing a cue."""

RELATIONS = re.compile(
    r"\bmy (sister|brother|mom|mother|dad|father|son|daughter|wife|husband|partner|friend|"
    r"boss|colleague|coworker|manager|roommate|neighbou?r|cousin|aunt|uncle|grandma|grandpa|"
    r"boyfriend|girlfriend|team|kids?)\b", re.IGNORECASE)
_FIRST = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|we|we're|our)\b", re.IGNORECASE)
_SECOND = re.compile(r"\b(?:you|you're|you've|your)\b", re.IGNORECASE)
_ROLE = re.compile(r"\bas an? ((?:[a-z]+ ){0,2}[a-z]+)", re.IGNORECASE)
_PLACE = re.compile(r"\b(?:in|to|at|from) ((?:[A-Z][\w'’-]+ ?){1,3})")
_GENERIC = frozenset(
    "trying help want make sure need know think really just also get got going like able "
    "thing things way lot bit good great well much many sure yes yeah okay ok thanks thank "
    "hi hello one two still already currently recently now new actually time today "
    "i'm i've i'd i'll it's that's there's don't didn't doesn't can't won't isn't".split())
"""Words too common in chat to say two claims are about the same thing."""


@dataclass(frozen=True, slots=True)
class Value:
    """A value a claim states, with its kind and the topics around it (what it is a value of)."""

    text: str
    kind: str
    """"number", "date" or "name" (a place, person, role or other name)."""
    near: frozenset[str]


@dataclass(frozen=True, slots=True)
class Claim:
    """One sentence of a memory as the rules see it."""

    text: str
    subject: str
    """Whose fact: the speaker (first person), the addressee, or "speaker's relation"."""
    topics: frozenset[str]
    """Content-word stems and attribute families (`@residence`): what it is about."""
    values: tuple[Value, ...]
    cue: bool
    ended: bool
    denial: bool
    hypothetical: bool
    words: int


def claims(text: str, speakers: list[str]) -> list[Claim]:
    """The claims of a memory's text (lines of `speaker: words`, or one speaker's words)."""
    out = []
    default = speakers[0] if len(speakers) == 1 else "user"
    for line in text.splitlines():
        match = _SPEAKER.match(line)
        named = match.group(1).strip() if match else None
        speaker = named if named in speakers else default
        body = line[match.end():] if named in speakers else line
        for sentence in _SENTENCE.split(_DATE_NOTE.sub("", body)):
            if sentence and len(sentence.split()) >= 2:
                out.append(_claim(sentence.strip(), speaker, speakers))
    return out


def _claim(sentence: str, speaker: str, speakers: list[str]) -> Claim:
    found = list(_WORD.finditer(sentence))
    tokens = [m.group() for m in found]
    spans = _values(sentence, tokens, [m.start() for m in found])
    named = {v for v, _, _ in spans}
    topic_at = [_topics(t, named) for t in tokens]
    topics = frozenset().union(*topic_at)
    values = tuple(Value(text, kind, frozenset().union(*topic_at[max(0, at - _NEAR):
                                                                 at + _NEAR + 1]))
                   for text, kind, at in spans)
    return Claim(sentence, _subject(sentence, speaker, speakers), frozenset(topics), values,
                 bool(CUES.search(sentence)), bool(ENDED.search(sentence)),
                 bool(NEVER.search(sentence)), _hypothetical(sentence), len(tokens))


def _hypothetical(sentence: str) -> bool:
    return bool(HYPOTHETICAL.search(sentence)) or (
        bool(PLAN.search(sentence)) and not CUES.search(sentence))


_NEAR = 6
"""Tokens either side of a value whose topics say what it is a value of."""


def _topics(token: str, named: set[str]) -> frozenset[str]:
    """What a token says a claim is about: its stem, and its attribute family if any."""
    low = token.lower()
    family = _FAMILY_OF.get(low)
    if low in named:
        return frozenset({"@" + family} if family else ())
    if low in STOPWORDS or low in _GENERIC or low[0].isdigit() or low in MONTHS \
            or len(low) < 3:
        return frozenset()
    return frozenset({_stem(low), "@" + family} if family else {_stem(low)})


def _subject(sentence: str, speaker: str, speakers: list[str]) -> str:
    relation = RELATIONS.search(sentence)
    if relation:
        return f"{speaker}'s {relation.group(1).lower()}"
    if _FIRST.search(sentence):
        return speaker
    if _SECOND.search(sentence):
        others = [s for s in speakers if s != speaker]
        return others[0] if len(others) == 1 else ("user" if speaker == "assistant" else "?")
    names = [s for s in speakers if s != speaker and re.search(rf"\b{re.escape(s)}\b",
                                                                 sentence)]
    return names[0] if names else speaker


def _values(sentence: str, tokens: list[str], starts: list[int]) -> list[tuple[str, str, int]]:
    """Numbers (with the unit after them), dates, roles and capitalised names, each with
    its kind and token position."""
    out: list[tuple[str, str, int]] = []
    skip = set()
    for i, token in enumerate(tokens):
        low = token.lower()
        if i in skip:
            continue
        if low in MONTHS[:12] and i + 1 < len(tokens) and tokens[i + 1][0].isdigit():
            out.append((f"{low} {tokens[i + 1].rstrip('.,')}", "date", i))
            skip.add(i + 1)
        elif low in STATES:
            out.append((low, "name", i))
        elif token[0].isdigit():
            out.append((token.rstrip(".,").replace(",", ""), "number", i))
        elif i and token[0].isupper() and low not in _FAMILY_OF and low not in STOPWORDS \
                and low not in MONTHS and token not in ("I", "I'm", "I've", "I'd", "I'll"):
            out.append((low, "name", i))
    for pattern in (_ROLE, _PLACE):
        for m in pattern.finditer(sentence):
            at = sum(1 for s in starts if s < m.start(1))
            out.append((m.group(1).strip().lower(), "name", at))
    return out


_AGAIN = ("resched", "rebook", "rearrang", "relocat")
"""Verbs whose "re-" means "again": 'rescheduled' is about what was 'scheduled'."""


def _stem(word: str) -> str:
    """A crude English stem, enough to match 'scheduled' with 'rescheduled'."""
    word = word.lower().strip("'’-")
    if word.startswith(_AGAIN):
        word = word[2:]
    for suffix in ("ings", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
