"""Versions of one fact among a search's hits, newest first: hits that answer the same
question about the same person, said at different times, are read as versions of one fact
("I'm a barista at Blue Bottle", months later "three weeks into the bank job"). For a
question about the present the newest version comes first and each older one is marked
`current=False` with a note saying what replaced it, even when nothing linked them on write.

The question names the fact, so no vocabulary of changes is needed:

- **same question**: the hits near the query (best row above `FLOOR`, within `MARGIN` of
  the best hit's; at most `MOST` of them, or a question many hits answer is left as the
  ranker ordered it) answer it; a hit within `REACH` of the query that is the mutual
  nearest of one of them (best rows at least `PAIR` apart) is another version of it; an
  answer the bank already knows was superseded (a partial change: "cancelled Hulu, kept
  Netflix") has its successor moved before it when that answers the question too (or,
  when an LLM judged it on write, is within reach of the query);
- **same person** (`rmm_core.language.stance`): one person said each (with the assistant:
  a talk between people is left as ranked), and both speak of the asker ("I", "we", or a
  sentence about no one else) when the question does, or both name whom it asks about
  ("my manager"); "my sister lives in Berlin" is about the sister and replaces nothing of
  "I live in Lisbon";
- **said as the present**: the newer one is no wish, weighed choice, memory of long ago or
  short stay away, and does not say the older one's state goes on ("still in Leith");
- **different times**: said at least `GAP` apart.

Before the versions are read, the hits that answer and state something of the person asked
about come first (`answers_first`): a question put to the assistant, a relative's news, or,
for the present, a wish or a memory of long ago does not outrank them.

A question about the past (`about_the_past`, or `as_of`) is not passed here: the old fact
keeps its rank and is not marked.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta

import numpy as np

from ..language.change import evidence
from ..language.dates import format_date
from ..language.stance import STEM, Stance, parties, stance, theirs
from ..language.tokens import terms
from ..models.cosines import IDENTITY, CosineScale
from ..types import Memory, MemoryHit, as_utc
from .score import relevances
from .validity import quote

FLOOR = 0.2
"""Least cosine of a hit's best row to the query for it to answer the question."""
MARGIN = 0.2
"""How far below the best hit's cosine to the query an answer may be."""
MOST = 3
"""Most hits answering the question for any of them to be read as versions."""
REACH = 0.1
"""Least cosine to the query of another version: a change said in other words ("three
weeks into the bank job, I don't miss the coffee shop rush") is often far from the question
its older version answers ("where do I work?"); what makes it a version is its nearness to
the older one (`PAIR`)."""
PAIR = 0.3
"""Least cosine of two hits' best-matching rows for them to be versions of one fact."""
GAP = timedelta(days=1)
"""Least time between two versions."""


def newest_first(hits: Sequence[MemoryHit], query: str, query_vec: np.ndarray,
                 rows: Mapping[str, np.ndarray], *, now: bool = True,
                 others: Collection[str] = (), guess: bool = True,
                 close: Mapping[str, float] | None = None,
                 meaning: Collection[str] | None = None,
                 scale: CosineScale = IDENTITY) -> list[MemoryHit]:
    """The hits with each newest version of a fact right before its highest older version,
    the older ones marked `current=False` and noted (`now` False, or a question for a past
    event's detail, `_EVENT`: the hits as they are).
    `rows` maps a memory id to its unit vector rows; hits without rows are left alone;
    `others` names the speakers (the assistant) whose words say nothing of the asker;
    `guess` False keeps to the versions the bank recorded on write (an LLM judged them);
    `close`: the hits' `closeness` to the query, when a caller has it already; `meaning`:
    the languages the embedder reads (None: any), where nearness alone ties two hits;
    `scale`: the embedder's `cosine_scale` (thresholds were set on the MiniLM's)."""
    if not now or _EVENT.search(query):
        return list(hits)
    if close is None:
        close = closeness(hits, query_vec, rows, scale)
    if (answering := _answering(hits, close)) is None:
        return list(hits)
    asked, near = answering
    live = {i for i in asked if hits[i].memory.current and hits[i].current is not False}
    newer = _versions(hits, set(near), [i for i in asked if i in live and asked[i] >= REACH],
                      rows, query, others, meaning, scale) if guess else {}
    place = {h.memory.id: i for i, h in enumerate(hits)}
    # an answer the bank knows changed: its successor first when it answers too, or, when
    # an LLM judged the change on write (no `guess`), when it is within reach of the query
    for i in near:
        successor = place.get(hits[i].memory.superseded_by)
        if i not in live and (successor in near or not guess and successor is not None and
                              asked.get(successor, 0.0) >= REACH):
            newer.setdefault(i, successor)
    if not newer:
        return list(hits)
    order = list(range(len(hits)))
    for old, new in sorted(newer.items()):
        if order.index(new) > order.index(old):
            order.remove(new)
            order.insert(order.index(old), new)
    out = []
    for i in order:
        hit = hits[i]
        if i in newer and i in live:  # a hit marked already keeps its note
            successor = hits[newer[i]].memory
            hit = replace(hit, current=False, text=hit.text + outdated_note(successor))
        out.append(hit)
    return out


def answers_first(hits: Sequence[MemoryHit], query: str, close: Mapping[str, float], *,
                  now: bool = True, others: Collection[str] = ()) -> list[MemoryHit]:
    """The hits with those answering the question (the hits near it, as `newest_first`
    reads them) that state something of the person asked about put before those in which
    the person says nothing of it: a question put to the assistant, someone else's news
    and, when the question asks about the present (`now`), a wish or a memory of long ago;
    each in rank order, in the places the answering hits held (`close`: the hits'
    `closeness` to the query). The assistant's own words ("your sprint ends on the 29th")
    are left where they rank."""
    if (answering := _answering(hits, close)) is None:
        return list(hits)
    asked = parties(query)
    held = sorted(answering[1])
    read = {i: stance(hits[i].memory.text, others=others) for i in held}

    def off_answer(i: int) -> bool:
        named = read[i].opens_on  # "Marta finally quits, she ..." beside "I teach maths"
        return len(hits[i].memory.people(others)) == 1 and (
            now and not read[i].present or read[i].disowns or
            (not read[i].parties & asked if asked else not read[i].any_own or
             named is not None and all(named not in read[j].capitals
                                       for j in held if j != i)))

    order = list(range(len(hits)))
    for at, i in zip(held, sorted(held, key=off_answer)):
        order[at] = i
    return [hits[i] for i in order]


def closeness(hits: Sequence[MemoryHit], query_vec: np.ndarray,
              rows: Mapping[str, np.ndarray], scale: CosineScale = IDENTITY
              ) -> dict[str, float]:
    """Each hit's best cosine to the query (`relevances`, on the MiniLM's scale: the
    thresholds here were set on it), by memory id; hits without rows are left out.
    Computed once, it serves `answers_first` and `newest_first` alike."""
    placed = [h.memory.id for h in hits if len(rows.get(h.memory.id, ()))]
    return dict(zip(placed, relevances(query_vec, [np.atleast_2d(rows[i]) for i in placed],
                                       scale).tolist()))


def _answering(hits: Sequence[MemoryHit], close: Mapping[str, float]
               ) -> tuple[dict[int, float], list[int]] | None:
    """Each placed hit's closeness to the query, by place, and the places of those that
    answer it (within `MARGIN` of the best, above `FLOOR`); None when fewer than two hits,
    or no answer or more than `MOST` of them."""
    if len(hits) < 2:
        return None
    asked = {i: close[h.memory.id] for i, h in enumerate(hits) if h.memory.id in close}
    top = max(asked.values(), default=0.0)
    near = [i for i, s in asked.items() if s >= FLOOR and s >= top - MARGIN]
    return (asked, near) if 1 <= len(near) <= MOST else None


def outdated_note(successor: Memory) -> str:
    """` (may have changed 10 June 2024 → <first words of what replaced it>)`."""
    return f" (may have changed {format_date(successor.valid_from)} → " \
        f"{quote(successor.text)})"


def _versions(hits: Sequence[MemoryHit], near: Collection[int], reach: Sequence[int],
              rows: Mapping[str, np.ndarray], query: str, others: Collection[str],
              meaning: Collection[str] | None = None,
              scale: CosineScale = IDENTITY) -> dict[int, int]:
    """Each older version's place -> its newest version's place. Two hits within reach, one
    of them an answer (`near`), may be versions when their best rows are close (`PAIR`),
    both speak of the one asked about, they share a speaker and were said `GAP` apart. The
    newest of an older one's that is said as the present, does not say the older one's
    state goes on (`_goes_on_about`) and is a sure change of it (`language.change`)
    replaces it, if the two are each other's nearest or the change names the value it ends
    or replaces (`_NAMED`): mentions in between ("the box raised its fee again") then hide
    nothing, and a memory of many matters changes no other fact it is near to."""
    asked = parties(query)
    places = [i for i in reach if len(hits[i].memory.people(others)) <= 1 and
              _about(stance(hits[i].memory.text, others=others), asked)]
    if len(places) < 2:
        return {}
    close = scale.of_texts(_closeness([np.atleast_2d(rows[hits[i].memory.id])
                                       for i in places]))
    np.fill_diagonal(close, -np.inf)
    nearest = close.argmax(axis=1)
    words = {w[:STEM] for w in terms(query)}
    out = {}
    for x, a in enumerate(places):
        old = hits[a].memory
        later = [y for y, b in enumerate(places) if close[x, y] >= PAIR and
                 (a in near or b in near) and _shared(old, hits[b].memory) and
                 as_utc(hits[b].memory.valid_from) - as_utc(old.valid_from) >= GAP]
        if not later:
            continue
        before = stance(old.text, others=others)
        said = _content(old.text) - words
        for y in sorted(later, key=lambda y: as_utc(hits[places[y]].memory.valid_from),
                        reverse=True):
            b = places[y]
            read = stance(hits[b].memory.text, others=others)
            if theirs(read, before):
                continue  # "Priya finally moved out of Denver", "the retriever isn't mine"
            if not read.present or read.goes_on & said and not read.moves_on & said or \
                    _goes_on_about(read, before):
                continue
            found = evidence(old.text, hits[b].memory.text, question=query, others=others,
                             meaning=meaning)
            if found.sure and (nearest[x] == y and nearest[y] == x or found.kind in _NAMED):
                out[a] = b
                break
    return out


_EVENT = re.compile(r"\b(?:what|when|where|which|who|how)\b(?:\s+\w+){0,2}?\s+did\b",
                    re.IGNORECASE)
"""A question for a detail of a past event ("What did Maya run the half marathon in?"):
what came of it since is no newer version of its answer."""
_NAMED = ("ends", "replaces")
"""Kinds of change that name the value they end or replace (`Evidence.kind`)."""


def _goes_on_about(new: Stance, old: Stance) -> bool:
    """Whether the newer statement names what the older one named, nothing new, and ends
    or negates nothing ("Pixel knocked my medal off the shelf" after "I adopted a cat,
    Pixel"; not "pas de Grèce cette année"): it goes on about the same thing rather than
    replacing it."""
    return bool(new.capitals & old.names) and new.names <= old.names and not new.ends and \
        not new.negated & old.names


def _closeness(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """The best cosine between each two hits' rows (a square matrix, by place)."""
    starts = np.cumsum([0, *(len(v) for v in vectors[:-1])])
    stacked = np.vstack(vectors)
    # every row pair's cosine at once, by einsum: no BLAS threads, which on a busy machine
    # cost more than the product itself (a 40-row gram: 10 ms by matmul, 0.6 ms by einsum)
    gram = np.einsum("ij,kj->ik", stacked, stacked)
    return np.maximum.reduceat(np.maximum.reduceat(gram, starts, axis=0), starts, axis=1)


def _shared(old: Memory, new: Memory) -> bool:
    """Whether two memories share a speaker (or either names none)."""
    return not (old.speakers and new.speakers) or bool(set(old.speakers) & set(new.speakers))


def _about(read: Stance, asked: frozenset[str]) -> bool:
    """Whether a hit states something of whom the question asks about (none named: the
    asker); of someone named, the speaker's own words count ("we pulled Ava out of
    Lincoln")."""
    if not read.states:
        return False
    return bool(read.parties & asked) or not read.parties if asked else read.own


def _content(text: str) -> set[str]:
    """The words of `text` that can name a value: numbers and words of four letters or more."""
    return {w[:STEM] for w in terms(text) if any(c.isdigit() for c in w) or len(w) > 3}
