"""A memory's sentences read as claims: whose they are, what they are about, the values they
state, and whether they say something changed. The supersession rules compare these.

LLM-free and English-only: a closed vocabulary of change cues, negations and single-valued
attributes (where one lives, one's job, diet, partner), and values found by shape (numbers
with their units, dates, names, "as a <role>").
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache

from ..text import STOP_WORDS as STOPWORDS

_SPEAKER = re.compile(r"^([^\s:][^:\n]{0,40}):\s+")
_SENTENCE = re.compile(r"(?<=[.!?;])(?<!\bDr\.)(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bSt\.)"
                       r"(?<!\bProf\.)\s+|\s*\n\s*|\s+(?:but|however|though|whereas)\s+",
                       re.IGNORECASE)
"""Sentence ends (not after a title: "Dr. Patel"), line breaks and contrasts."""
_CLAUSE = re.compile(
    r",\s+(?=(?:so|and|or|can|could|would|will|do|does|did|is|are|was|how|what|why|"
    r"where|when|should|any|please)\b)|\s+[-–—]\s+|(?<=\bremind me that)\s+|"
    r"(?<=\bthe fact that)\s+|\s+(?=(?:since|because|now that|given that)\b)",
    re.IGNORECASE)
"""Where a chat sentence joins clauses: "I only got 3 interviews, is that good?" states a fact
and then asks; "can you remind me that it's rescheduled to 4:30" asks about one. Each clause
is read as a claim of its own, so the question does not hide the fact."""
_ASKING = re.compile(r"^(?:can|could|would|will|do|does|did|is|are|was|were|am|how|what|"
                     r"why|where|when|which|who|should|shall|any|have|has)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*\d*[A-Za-z]*|[$€£]?\d[\d,.:/]*(?:%|[A-Za-z]+\b)?")
"""Words, and numbers with what is glued to them ("$40", "20%", "6am"); "Q3" and "p95" are
one word."""
_CURRENCY = "$€£"
_DATE_NOTE = re.compile(r"\s*\((?:the week of )?[^()]*\d{4}\)")
"""What `timeref.ground` adds after a relative time: the claim reads the words as said."""

WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
MONTHS = ("january february march april may june july august september october november "
          "december jan feb mar apr jun jul aug sep sept oct nov dec").split()

CUES = re.compile(
    r"\b(?:now|no longer|not any ?more|any ?more|actually|instead|changed?|switch(?:ed)?|"
    r"moved|relocated|resched\w*|postponed|pushed (?:back|out)|delayed|brought forward|"
    r"updated?|new|newly|recently|latest|currently|these days|nowadays|increased|"
    r"decreased|raised|lowered|reduced|dropped|grown|grew|went (?:up|down)|gone (?:up|down)|"
    r"adjusted|revised|extended|shortened|bumped|upped|cut|shifted|slipped|pushed|passed|hit|"
    r"went back|as of|quit|left|stopped|gave up|given up|ended|"
    r"became|become|started|turned|got (?:a|an|my) new|cancel+ed|correction|scratch that|"
    r"hired|promoted|"
    r"from now on|going forward|at this point|so far|total of|reached|up to|down to)\b",
    re.IGNORECASE)
"""Words that say a fact is new or has changed."""

ENDED = re.compile(r"(?<!n't )(?<!not )(?<!never )(?<!will )(?<!'ll )(?<!to )(?<!gonna )"
                   r"\b(?:no longer|stopped|quit|gave up|given up|left|ended|cancel+ed)\b|"
                   r"(?:n't|\bnot|\bno)\b.*\bany ?more\b", re.IGNORECASE)
"""A state that ended: a change by itself, with no new value needed ("I won't quit" and "I'll
quit" end nothing)."""
_REMAINING = re.compile(r"\b(?:\d[\d,.]*|nothing|none|much|any|few|some|little)\s+"
                        r"(?:[\w'-]+\s+){0,2}left\b", re.IGNORECASE)
""""Left" as what remains ("14 story points left"): neither an ending nor a change."""

NEVER = re.compile(r"(?<!will )(?<!'ll )(?<!would )(?<!'d )(?<!can )(?<!could )"
                   r"\b(?:never(?! mind| forget)|not once|not ever|n't ever|nobody|no one)\b|"
                   r"\b(?:have|has|had)(?:n't| not) (?:ever|once)\b|\b(?:have|has|had) no\b",
                   re.IGNORECASE)
"""A denial: with no change cue, it contradicts the positive claim rather than updating it.
Only a whole denial of a fact ("never", "have no"): chat is full of "I don't know",
"didn't expect" and "I'll never forget it" that deny nothing a memory states."""

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
                 "apartment flat house address neighborhood neighbourhood hometown",
    "job": "work works working job position role employer company hired career profession "
           "occupation employed",
    "schedule": "scheduled schedule rescheduled reschedule meeting appointment webinar call "
                "event deadline due date launch release postponed session booked flight "
                "class lesson practice reservation cancel cancelled canceled",
    "diet": "diet eat eating eats vegan vegetarian pescatarian meat food allergic keto",
    "partner": "married dating partner girlfriend boyfriend wife husband single divorced "
               "engaged fiance fiancee",
    "preference": "like likes love loves prefer prefers favorite favourite enjoy enjoys hate "
                  "hates fan",
}
STATES = frozenset("vegan vegetarian pescatarian keto meat married single divorced engaged "
                   "dating retired unemployed freelance remote".split())
"""Words that are themselves the value of an attribute ("I'm vegetarian")."""
SINGLE_VALUED = frozenset({"residence", "job", "diet", "partner"})
"""Attributes a person has one value of at a time: a new value replaces the old without
needing a cue."""

RELATIONS = re.compile(
    r"\bmy (?:new |old |ex-?)?(sister|brother|mom|mother|dad|father|son|daughter|wife|husband|"
    r"parents|grandparents|partner|friend|boss|colleague|coworker|manager|roommate|neighbou?r|"
    r"cousin|aunt|uncle|grandma|grandpa|boyfriend|girlfriend|team|kids?)\b", re.IGNORECASE)
_OBJECT = re.compile(r"\b(?:is|are|was|were|am|from|with|to|for|of|at|by|about)\s+$|"
                     r"\b(?:I|I'm|I've|I'd|I'll|we|we're|we've)\b", re.IGNORECASE)
"""Words before "my <relation>" that make it an object ("Sam is my boyfriend", "I eat eggs from
my neighbour's hens"): the sentence is then about the speaker, not the relation."""
_REPORTED = re.compile(r"\b(?:think|thought|heard|guess|know|knew|said|told me|found out|"
                       r"learned|learnt)\s+(?:that\s+)?$", re.IGNORECASE)
"""Unless the speaker only reports it: "I heard my boss quit" is about the boss."""
_WITH_ME = re.compile(r"\s+and (?:I|me)\b")
""""My wife and I moved": the speaker's fact as much as the relation's."""
_FIRST = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|we|we're|our)\b", re.IGNORECASE)
_SECOND = re.compile(r"\b(?:you|you're|you've|your)\b", re.IGNORECASE)
_ROLE = re.compile(r"\bas an? ((?:[a-z]+ ){0,2}[a-z]+)", re.IGNORECASE)
_PLACE = re.compile(r"\b(?:in|to|at|from) ((?:[A-Z][\w'’-]+ ?){1,3})")
_GENERIC = frozenset(
    "trying help want make sure need know think really just also get got going like able "
    "thing things way lot bit good great well much many sure yes yeah okay ok thanks thank "
    "hi hello one two still already currently recently now new actually time today "
    "i'm i've i'd i'll it's that's there's don't didn't doesn't can't won't isn't "
    "using use used set setting done looking noticed implement implementing implemented "
    "working trying tried currently around project".split())
"""Words too common in chat to say two claims are about the same thing."""


@dataclass(frozen=True, slots=True)
class Value:
    """A value a claim states, with its kind and the topics around it (what it is a value of)."""

    text: str
    kind: str
    """"number", "date" or "name" (a place, person, role or other name)."""
    near: frozenset[str]
    was: bool = False
    """Named as the value being left ("moved from Leeds to York"): not a value it states."""


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
    denied: frozenset[str]
    """What a denial denies: the topics and names just after "never" (empty: no denial)."""
    hypothetical: bool
    words: int

    @property
    def denial(self) -> bool:
        return bool(self.denied)


_NOT_PROSE = re.compile(r"^\s*(?:#|\||>|```|(?:def|class|import|from|return|if|for|elif|"
                       r"else|try|except|with|const|let|var|function|SELECT|INSERT)\b)|"
                       r"[{};]\s*$|\w\(.*\)\s*$|\w\s*=\s*\S|\w\.\w+\(|</?\w+>")
"""Code, markup and headings: they state no fact about a person."""


_PROSE_CHARS = frozenset(" ,.;:!?'’\"-–—$€£%/&")


def _prose(line: str) -> bool:
    """Whether a line reads as prose: almost all letters, digits and sentence punctuation
    (code, tables and markup are dense in brackets, operators and underscores)."""
    chars = [c for c in line if not c.isspace()]
    odd = sum(1 for c in chars if not c.isalnum() and c not in _PROSE_CHARS)
    return odd <= max(2, 0.04 * len(chars))


_RESTATED = re.compile(r"(?:you (?:said|mentioned|told me|noted|shared)|your)\b", re.IGNORECASE)
"""How an assistant restates the user's own facts ("Your report is due on May 31"): the
only words of a skipped speaker that make claims."""


def claims(text: str, speakers: list[str], *,
           skip: Collection[str] = ("assistant",), clauses: bool = False) -> list[Claim]:
    """The claims of a memory's text (lines of `speaker: words`, or one speaker's words).

    Lines of the `skip` speakers (an assistant's advice is no fact about the user) make
    claims only where they restate the user's facts; lines of code or markup, fenced or
    not, make none. With `clauses`, each clause of a sentence is a claim of its own (what
    reading for a question needs); supersession reads whole sentences, which measured
    better there (a clause alone loses what its values are values of)."""
    out = []
    skipped = {s.casefold() for s in skip}
    default = speakers[0] if len(speakers) == 1 else "user"
    speaker, fenced = default, False
    for line in text.splitlines():
        match = _SPEAKER.match(line)
        named = match.group(1).strip() if match else None
        if named in speakers:  # a line without a name goes on with the last speaker's turn
            speaker, fenced = named, False
        body = line[match.end():] if named in speakers else line
        if body.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or _NOT_PROSE.search(body) or not _prose(body):
            continue
        aside = speaker.casefold() in skipped
        for sentence in _SENTENCE.split(_DATE_NOTE.sub("", body)):
            if aside and not _RESTATED.match(sentence.strip()):
                continue
            for clause in _CLAUSE.split(sentence) if clauses else [sentence]:
                if len(clause.split()) >= 2:
                    out.append(_claim(clause.strip(), speaker, speakers, clauses))
    return out


def _claim(sentence: str, speaker: str, speakers: list[str], clause: bool = False) -> Claim:
    found = list(_WORD.finditer(sentence))
    tokens = [m.group() for m in found]
    spans = [v for v in _values(sentence, tokens, [m.start() for m in found])
             if v[0] not in {s.casefold() for s in speakers}]  # "Thanks, Mel!" names no value
    named = {v for v, _, _ in spans}
    topic_at = [_topics(t, named) for t in tokens]
    for text, kind, at in spans:
        if kind == "number" and " " in text and text[-1] not in _CURRENCY:
            # the unit (after it) or the thing versioned (before it) says what it measures
            near = at + 1 if at + 1 < len(tokens) and \
                _stem(tokens[at + 1]) == text.split(" ", 1)[1] else at - 1
            topic_at[near] = topic_at[near] | {_stem(tokens[near])}
        elif kind == "date":
            topic_at[at] = topic_at[at] | {"@schedule"}
    topics = frozenset().union(*topic_at)
    values = tuple(Value(text, kind, frozenset().union(*topic_at[max(0, at - _NEAR):
                                                                 at + _NEAR + 1]),
                         at > 0 and tokens[at - 1].lower() == "from")
                   for text, kind, at in spans)
    said = _REMAINING.sub("", sentence)
    denial = NEVER.search(sentence)
    denied: frozenset[str] = frozenset()
    if denial:
        at = sum(1 for m in found if m.start() < denial.end())
        denied = frozenset().union(*topic_at[at:at + _NEAR]) | {
            text for text, _, where in spans if at <= where < at + _NEAR}
    return Claim(sentence, _subject(sentence, speaker, speakers), frozenset(topics), values,
                 bool(CUES.search(said)), bool(ENDED.search(said)), denied,
                 _hypothetical(sentence, clause), len(tokens))


_MAY_MONTH = re.compile(r"\bMay(?=\s+\d)|(?<=\w )May\b")
""""May" before a day or inside a sentence: the month, not the modal verb."""


def _hypothetical(sentence: str, clause: bool = False) -> bool:
    """A condition, a wish, a plan or a question. A clause ending in "?" asks only when it
    opens like a question ("it's rescheduled to 4:30?", left of "can you remind me that
    ...", states its fact)."""
    sentence = _MAY_MONTH.sub("", sentence)
    if clause and sentence.rstrip().endswith("?") and not _ASKING.match(sentence):
        sentence = sentence.rstrip().rstrip("?")
    return bool(HYPOTHETICAL.search(sentence)) or (
        bool(PLAN.search(sentence)) and not CUES.search(sentence))


_NEAR = 6
"""Tokens either side of a value whose topics say what it is a value of."""


@lru_cache(maxsize=16384)
def topics_of(text: str) -> frozenset[str]:
    """What a text is about, as claims see it: content-word stems and attribute families
    ("Where do I live?" is about `@residence`, as "I moved to Berlin" is); cached, since
    the read steps ask it of the same memories' words query after query."""
    return frozenset().union(*(_topics(m.group(), set()) for m in _WORD.finditer(text)))


def _topics(token: str, named: set[str]) -> frozenset[str]:
    """What a token says a claim is about: its stem, and its attribute family if any."""
    low = token.lower()
    family = _family(low)
    if low in named:
        return frozenset({"@" + family} if family else ())
    if low in STOPWORDS or low in _GENERIC or low.lstrip(_CURRENCY)[:1].isdigit() or low in MONTHS \
            or len(low) < 3:
        return frozenset()
    return frozenset({_stem(low), "@" + family} if family else {_stem(low)})


def _subject(sentence: str, speaker: str, speakers: list[str]) -> str:
    relation = RELATIONS.search(sentence)
    before = sentence[:relation.start()] if relation else ""
    if relation and not _WITH_ME.match(sentence, relation.end()) and (
            _REPORTED.search(before) or not _OBJECT.search(before)):
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
    """Numbers (with the unit after them), dates (a month's day, a weekday, a time of day),
    roles, states and capitalised names, each with its kind and token position."""
    out: list[tuple[str, str, int]] = []
    skip = set()
    for i, token in enumerate(tokens):
        low = token.lower()
        if i in skip:
            continue
        if low in MONTHS[:12] and i + 1 < len(tokens) and tokens[i + 1][0].isdigit():
            out.append((f"{low} {tokens[i + 1].rstrip('.,')}", "date", i))
            skip.add(i + 1)
        elif low.rstrip("s") in WEEKDAYS or _TIME.fullmatch(low):
            out.append((low.rstrip("s"), "date", i))
        elif _stem(low) in _STATES:
            out.append((_stem(low), "name", i))
        elif token.lstrip(_CURRENCY)[:1].isdigit():
            number = token.lstrip(_CURRENCY).rstrip(".,").replace(",", "")
            unit = tokens[i + 1].lower() if i + 1 < len(tokens) else ""
            if token[0] in _CURRENCY:
                number = f"{number} {token[0]}"
            elif i and tokens[i - 1][:1].isupper() and "." in number:
                number = f"{number} {tokens[i - 1].lower()}"  # a version: "Flask 2.3.1"
            elif unit.isalpha() and unit not in STOPWORDS and unit not in _GENERIC:
                number = f"{number} {_stem(unit)}"
            out.append((number, "number", i))
        elif i and token[0].isupper() and low not in _FAMILY_OF and low not in STOPWORDS \
                and low not in MONTHS and token not in ("I", "I'm", "I've", "I'd", "I'll"):
            out.append((low, "name", i))
    for pattern in (_ROLE, _PLACE):
        for m in pattern.finditer(sentence):
            name = m.group(1).strip().lower()
            if name.split()[0] not in MONTHS and name.rstrip("s") not in WEEKDAYS:
                out.append((name, "name", sum(1 for s in starts if s < m.start(1))))
    return out


_TIME = re.compile(r"\d{1,2}(?::\d\d)?(?:am|pm)|\d{1,2}:\d\d")
_AGAIN = ("resched", "rebook", "rearrang", "relocat")
"""Verbs whose "re-" means "again": 'rescheduled' is about what was 'scheduled'."""


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """A crude English stem, enough to match 'scheduled' with 'rescheduled' and 'smoke' with
    'smoking': the inflection, a doubled last consonant and a final 'e' go."""
    word = word.lower().strip("'’-")
    if word.startswith(_AGAIN):
        word = word[2:]
    for suffix in ("ings", "ing", "ed", "es", "s"):
        if suffix == "es" and not word.endswith(("ses", "xes", "zes", "ches", "shes")):
            continue  # "notes" is "note" + s, "boxes" is "box" + es
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)]
            if word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


_FAMILY_OF = {w: name for name, ws in FAMILIES.items() for w in ws.split()}
_STEMS: dict[str, set[str]] = {}
for _name, _words in FAMILIES.items():
    for _word in _words.split():
        _STEMS.setdefault(_stem(_word), set()).add(_name)
_FAMILY_OF_STEM = {stem: names.pop() for stem, names in _STEMS.items() if len(names) == 1}
"""Attribute families by word, and by stem for other inflections ("jobs", "lived")."""
_STATES = frozenset(_stem(w) for w in STATES)


def attribute_words(text: str) -> frozenset[str]:
    """The words of `text` that name an attribute family ("live", "moved", "job", "diet"):
    what a question names, as against the value it asks for."""
    return frozenset(m.group().lower() for m in _WORD.finditer(text)
                     if _family(m.group().lower()))


def _family(low: str) -> str | None:
    return _FAMILY_OF.get(low) or _FAMILY_OF_STEM.get(_stem(low))
