"""Which earlier memories a new one changes: supersession found without an LLM.

Similarity alone cannot tell an update from a restatement (both are close), so the rules
read claims (`claims.py`) and ask four questions of a new claim against an earlier one:
- **subject**: is it the same person's fact (same speaker, or the same relation of theirs)?
  Talk between people is left alone, as at read time: whose fact "I" states changes from
  line to line, and a two-person memory made of dozens of claims ended twenty others.
  Someone else's news changes nothing of the speaker's, as at read time
  (`language.stance.theirs`): a memory that opens on a name ("Mike quit pickleball for
  padel ... he wants me to come") unless the older one names them, that the speaker
  disowns ("I'm not the one moving"), or with no statement of the speaker's own ("my best
  friend is getting divorced, she's staying with us") against one of theirs.
- **attribute**: is it about the same thing (a shared attribute family such as where one
  lives, two shared topic words, or one that the new claim says ended or states a new value
  near: "I quit smoking", "down to 76 kg")?
- **value**: does it state a different value of it (a value of the same kind near the
  shared topic, present in one and not the other), or say the old state ended?
- **cue**: does it say something changed ("now", "moved", "rescheduled", "no longer"), and
  is it a fact rather than a plan or a question? A single-valued attribute needs no cue.
A denial against a positive claim on the same subject and topic, with no cue, is a
contradiction: both are kept current and flagged (`kind` "conflicts").

A memory told as long ago or as a stay that ends ("when I was a kid we lived in Anchorage",
"at my in-laws' for the month") supersedes nothing; a contradiction it states still counts.

A memory holding several claims may be superseded in part: `FactChange.part` is then the old
claims that changed, and the rest of the memory still holds.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ..language.change import evidence, replaces_value, says_changed
from ..language.claims import SINGLE_VALUED, Claim, Value, attribute_words, claims
from ..language.stance import Stance, stance, theirs
from ..storage.base import Store
from ..types import FactChange, Memory, as_utc

if TYPE_CHECKING:
    from .judge import ChangeJudge

log = logging.getLogger("rmm_core.write.supersede")

SIGNALS = ("subject", "attribute", "cue", "value", "sure")
"""The evidence the rules weigh ("sure": `language.change` finds the change sure, no mention
of a value that goes on); `find_changes(..., off=...)` turns any of them off (it then
always passes), so a bench can measure what each contributes."""

MOST_ENDED = 2
"""Most earlier memories one new memory ends."""
WHOLE = 0.5
"""A memory is superseded whole when the changed claims hold at least this share of its
words; below it, in part."""

JUDGED = 0.2
"""Least cosine between the best rows of a new memory and an earlier one for the LLM judge
to be shown them as a pair: small talk is no version of a fact, and a small model shown
one may call it a change ("first week at the bank went great" and "I'm a barista" are
0.23 apart)."""


def find_changes(new: Sequence[Memory], earlier: Sequence[Memory], *,
                 off: Collection[str] = (),
                 assistants: Collection[str] = ("assistant",),
                 unsure: bool = False) -> list[FactChange]:
    """The changes `new` memories make to `earlier` ones and to each other (a memory can
    only change one said before it); a memory already superseded is not changed again.
    What `assistants` say makes and loses no claims: the facts are the people's. Each
    change carries its `confidence`; those below `change.SURE` are left out unless
    `unsure` (proposals for an LLM to decide)."""
    checks = frozenset(SIGNALS) - frozenset(off)
    skip = tuple(sorted(assistants))
    parsed = {m.id: _claims(m.text, tuple(m.speakers or ["user"]), skip)
              for m in [*earlier, *new]}
    taken = {m.id for m in earlier if m.superseded_by}
    names = {id(c): _names(c) for cl in parsed.values() for c in cl}
    changes = {mid: may_change(c) for mid, c in parsed.items()}
    denies = {mid: any(c.denial for c in cl) for mid, cl in parsed.items()}
    out: list[FactChange] = []
    ordered = sorted(new, key=_moment)
    for i, memory in enumerate(ordered):
        if "subject" in checks and len(memory.people(assistants)) > 1:
            continue  # talk between people: whose fact "I" states changes line by line
        read = stance(memory.text, others=assistants)
        before = [m for m in [*earlier, *ordered[:i]]
                  if m.id != memory.id and m.id not in taken and _moment(m) <= _moment(memory)
                  and ("subject" not in checks or len(m.people(assistants)) <= 1)
                  and (changes[memory.id] or denies[m.id] or off) and
                  _whose(read, stance(m.text, others=assistants), checks)]
        ends: list[FactChange] = []
        for old in before:
            change = _compare(memory, parsed[memory.id], old, parsed[old.id], checks, names)
            if change is None or change.kind == "supersedes" and read.aside:
                continue  # "when I was a kid we lived in Anchorage": how things were
            if change.kind == "conflicts":
                out.append(change)
                continue
            sure = evidence(old.text, memory.text, question=_attributes(old, memory),
                            replaced=_replaced(parsed[memory.id], old),
                            cued=any(not n.hypothetical and says_changed(n.text)
                                     for n in parsed[memory.id]), others=assistants)
            if "sure" not in checks or sure.sure or unsure:
                ends.append(replace(change, confidence=sure.confidence))
        # a statement that seems to end many facts at once is about none of them in
        # particular ("I'm loving the new job!"): it ends the `MOST_ENDED` surest, and of
        # those as sure, the earliest: where the fact was first said, not a later mention
        said = {m.id: _moment(m) for m in before}
        ends.sort(key=lambda c: (-c.confidence, said[c.old_id]))
        out += ends[:MOST_ENDED]
        taken.update(c.old_id for c in ends[:MOST_ENDED])
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")


def _sentence_around(text: str, part: str) -> str:
    """The sentence of `text` that holds `part` (a claim cut at "but" is no sentence of its
    own: a note quoting it would cut the sentence in half), without its speaker's name."""
    for sentence in _SENTENCE_END.split(text):
        if part in sentence:
            return _SPEAKER.sub("", sentence).strip()
    return part


_SPEAKER = re.compile(r"^[^\s:][^:\n]{0,40}:\s+")


def _attributes(old: Memory, new: Memory) -> str:
    """The attribute words both memories say ("live", "work", "scheduled"): what a
    question about the fact would name, as against its value ("austin" said again)."""
    return " ".join(attribute_words(old.text) | attribute_words(new.text))


def _replaced(new_claims: Sequence[Claim], old: Memory) -> bool:
    """Whether a claim that says a value changed (`change.says_changed`: "raised",
    "rescheduled to", "now"; not any cue word, "felt very grown up") states one of the same
    kind in place of one the earlier memory states (`change.replaces_value`: "raised my
    quota to 50,000 requests"; not "moved the payment to the 1st" where no date was said)."""
    return any(not n.hypothetical and says_changed(n.text) and replaces_value(old.text, n.text)
               for n in new_claims)


def _whose(new: Stance, old: Stance, checks: frozenset[str]) -> bool:
    """Whether a newer statement may change an older one's fact: it is not someone else's
    news (`theirs`) and, with the subject checked, says something of the speaker's own when
    the older one does."""
    return not theirs(new, old) and ("subject" not in checks or new.any_own or not old.own)


def may_change(new_claims: Sequence[Claim]) -> bool:
    """Whether any claim could change an earlier one: a stated fact (not a plan or a
    question) that says something changed or ended, is about an attribute one has one
    value of at a time, or denies something. A memory with none is not searched for
    candidates of its own (most are not: 8 % of one BEAM chat's memories are); it is still
    compared with those of the other memories written with it."""
    return any(_may_change(c) for c in new_claims)


def _may_change(claim: Claim) -> bool:
    return not claim.hypothetical and (_changing(claim) or claim.denial)


def _changing(claim: Claim) -> bool:
    return claim.cue or claim.ended or any(t[1:] in SINGLE_VALUED for t in claim.topics
                                           if t.startswith("@"))


def _moment(memory: Memory) -> datetime:
    """When a memory became true, comparable whether or not its date carries a zone."""
    return as_utc(memory.valid_from)


@lru_cache(maxsize=8192)
def _claims(text: str, speakers: tuple[str, ...], skip: tuple[str, ...]) -> list[Claim]:
    """`claims`, cached: an earlier memory is compared with every new one near it."""
    return claims(text, list(speakers), skip=skip)


Similar = Callable[[str, str, np.ndarray, Mapping[str, Any], int], list[str]]
"""(user id, text, vector, metadata, how many) → ids of the user's stored memories nearest to
a written one by words and meaning, of its scope (`read.search.Searcher.similar`)."""


class Supersession:
    """Finds and records what newly written memories change: the candidates are each new
    memory's nearest stored memories of the same scope (metadata), by meaning and by words;
    the rules decide (`find_changes`); the store records it (`Store.record_changes`)."""

    def __init__(self, store: Store, similar: Similar, *, candidates: int = 12,
                 assistants: Collection[str] = ("assistant",),
                 judge: ChangeJudge | None = None) -> None:
        self.store, self.similar, self.candidates = store, similar, candidates
        self.assistants = tuple(sorted(assistants))
        self.judge = judge
        """With an LLM: confirms the rules' changes and looks at what they passed over."""

    def __call__(self, user_id: str, new: Sequence[Memory],
                 known: Sequence[FactChange] = ()) -> list[Memory]:
        """`new` (already stored) as they are once what they change is recorded, with the
        `known` changes: an LLM's reconciliation decided those (its updates, and "none" for
        a stored memory it saw and left be: the rules' finding of that pair is dropped). A
        failure is logged, not raised: the memories stay as written."""
        try:
            changed = {m.id: m for m in self._record(user_id, new, known)}
        except Exception:
            log.warning("finding what %d new memories supersede failed; they are kept as "
                        "current", len(new), exc_info=True)
            changed = {}
        return [changed.get(m.id, m) for m in new]

    def _record(self, user_id: str, new: Sequence[Memory],
                known: Sequence[FactChange]) -> list[Memory]:
        # an LLM's reconciliation decided these pairs (an update, or "none": no change)
        decided = {(c.old_id, c.new_id) for c in known} | {c.old_id for c in known
                                                            if c.kind == "supersedes"}
        known = [c for c in known if c.kind != "none"]
        changing = {m.id: [c for c in _claims(m.text, tuple(m.speakers or ["user"]),
                                              self.assistants) if _may_change(c)]
                    for m in new}
        found: list[FactChange] = []
        if any(changing.values()) or self.judge is not None:
            earlier, nearest = self._earlier(user_id, new, changing)
            found = find_changes(new, earlier, assistants=self.assistants,
                                 unsure=self.judge is not None)
            if self.judge is not None:
                found = self.judge(found, nearest, {m.id: m for m in [*earlier, *new]})
        changes = [*known, *(c for c in found if c.old_id not in decided and
                             (c.old_id, c.new_id) not in decided)]
        return self.store.record_changes(user_id, changes) if changes else []

    def _earlier(self, user_id: str, new: Sequence[Memory], changing: dict[str, list[Claim]]
                 ) -> tuple[list[Memory], dict[str, list[str]]]:
        """The stored memories near the `new` ones that may change something (by meaning,
        and by the words of their changing claims), of their scope; and for each such new
        memory, the ids of its current ones, nearest first. With a judge every new memory
        may change something: the LLM reads changes no cue word marks ("first week at the
        bank went great")."""
        asking = [m for m in new if changing[m.id] or self.judge is not None]
        vectors = self.store.memory_vectors(user_id, [m.id for m in asking])
        near = {m.id: [mid for mid in self.similar(
            user_id, " ".join(c.text for c in changing[m.id]) or m.text, vectors[m.id][0],
            m.metadata, self.candidates) if mid not in changing] for m in asking
            if m.id in vectors}
        wanted = dict.fromkeys(mid for ids in near.values() for mid in ids)
        scope = {tuple(sorted(m.metadata.items(), key=str)) for m in new}
        earlier = [m for m in self.store.memories(user_id, list(wanted), with_versions=False)
                   if tuple(sorted(m.metadata.items(), key=str)) in scope]
        current = {m.id for m in earlier if not m.superseded_by}
        if self.judge is not None:  # the judge is shown only pairs on one subject
            rows = self.store.memory_vectors(user_id, list(current))
            current = {i for i in current if i in rows}
            near = {new_id: [i for i in ids if i in current and float(np.max(
                np.atleast_2d(vectors[new_id]) @ np.atleast_2d(rows[i]).T)) >= JUDGED]
                for new_id, ids in near.items()}
        return earlier, {new_id: [i for i in ids if i in current] for new_id, ids in near.items()}


def _compare(new: Memory, new_claims: list[Claim], old: Memory, old_claims: list[Claim],
             checks: frozenset[str], names: dict[int, set[str]]) -> FactChange | None:
    changed: list[Claim] = []
    by: list[str] = []
    conflict = False
    for n in new_claims:
        if "cue" in checks and n.hypothetical:
            continue
        changing = "cue" not in checks or _changing(n)
        for o in old_claims:
            # the verdicts below need a change or a denial, and (with the attribute check)
            # something both claims are about: most pairs fail here, cheaply
            if not (changing or n.denial or o.denial) or "attribute" in checks and \
                    n.topics.isdisjoint(o.topics) and names[id(n)].isdisjoint(
                        names[id(o)] | o.topics) and names[id(o)].isdisjoint(n.topics):
                continue
            verdict = _verdict(n, o, checks)
            if verdict == "supersedes":
                changed += [] if o in changed else [o]
                said = _sentence_around(new.text, n.text)
                by += [] if said in by else [said]
            conflict = conflict or verdict == "conflicts"
    signals = tuple(sorted(checks))
    if changed:
        words = sum(c.words for c in changed)
        total = len(old.text.split()) or 1
        part = None if words >= WHOLE * total else " ".join(c.text for c in changed)
        return FactChange(old.id, new.id, new.valid_from, "supersedes", part, " ".join(by),
                          signals)
    if conflict:
        return FactChange(old.id, new.id, new.valid_from, "conflicts", signals=signals)
    return None


def _verdict(n: Claim, o: Claim, checks: frozenset[str]) -> str | None:
    """"supersedes", "conflicts" or None for a new claim against an old one."""
    if "subject" in checks and n.subject != o.subject:
        return None
    if o.hypothetical:
        return None
    shared = n.topics & o.topics
    if n.denial != o.denial and not n.cue and not o.cue and not n.ended and \
            _shares_thing(n, o, shared):
        return "conflicts"
    families = {t[1:] for t in shared if t.startswith("@")}
    if "attribute" in checks and not families and len(shared) + len(_same_names(n, o)) < 2 \
            and not (shared and (n.ended or _new_value(n, o))):
        return None
    if "value" in checks and not (_new_value(n, o) or (n.ended and not o.ended)):
        return None
    if "cue" in checks and not (n.cue or n.ended):
        return None  # "I work as a nurse at the city hospital" is no move from Lisbon
    return "supersedes"


def _shares_thing(n: Claim, o: Claim, shared: frozenset[str]) -> bool:
    """Whether a denial and a positive claim deny and state the same thing: a shared name,
    or two shared topic words, one of them what the denial denies ("never met *Michael*")."""
    denied = n.denied | o.denied
    things = _same_names(n, o) | {t for t in shared if not t.startswith("@")}
    return bool(denied & things) and (bool(_same_names(n, o)) or len(things) >= 2)


def _names(claim: Claim) -> set[str]:
    return {v.text for v in claim.values if v.kind == "name"}


def _same_names(n: Claim, o: Claim) -> set[str]:
    """Names both claims hold; a name that opens a sentence ("Laura and I met") is read as a
    topic word, so a name of one claim also matches a topic of the other."""
    return (_names(n) & (_names(o) | o.topics)) | (_names(o) & n.topics)


def _new_value(n: Claim, o: Claim) -> bool:
    """Whether the new claim states a value of the same kind and about the same topic as
    one of the old claim's, that the old claim does not state (and the reverse); a value
    the new claim names as left ("from Leeds") is not one it states."""
    old_texts = {v.text for v in o.values if not v.was}
    new_texts = {v.text for v in n.values if not v.was}
    for nv in n.values:
        if nv.was or nv.text in old_texts:
            continue
        for ov in o.values:
            if ov.kind == nv.kind and ov.text not in new_texts and _same_unit(nv, ov) and (
                    _attribute_value(nv, ov) or _same_topic(nv, ov)):
                return True
    return False


def _same_unit(nv: Value, ov: Value) -> bool:
    """Numbers are values of one attribute only in the same unit ("$40" is not a count of
    requests; "2,000 newsletter subscribers" counts subscribers); a number without a unit
    may be either."""
    if nv.kind != "number" or " " not in nv.text or " " not in ov.text:
        return True
    new_unit, old_unit = nv.text.split(" ", 1)[1], ov.text.split(" ", 1)[1]
    return new_unit == old_unit or new_unit in ov.near or old_unit in nv.near


def _attribute_value(nv: Value, ov: Value) -> bool:
    """Two names near the same single-valued attribute (a city after "live in", a role
    after "work as")."""
    families = {t[1:] for t in nv.near & ov.near if t.startswith("@")}
    return nv.kind == "name" and bool(families & SINGLE_VALUED)


def _same_topic(nv: Value, ov: Value) -> bool:
    """Values near a shared topic word (not just an attribute family): one for numbers and
    dates, two for names (a name near one shared word is as often a different thing:
    "Flask" and "CRUD" both near "budget tracker")."""
    shared = sum(1 for t in nv.near & ov.near if not t.startswith("@"))
    return shared >= (2 if nv.kind == "name" else 1)
