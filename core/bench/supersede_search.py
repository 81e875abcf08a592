"""`rmm bench supersede --through-search`: changes of knowledge measured through the public
API, the way a held-out check sees them.

Each case is three or more dated sessions of one user: the first states a fact, the later
ones hold small talk on other topics and mentions of the fact's thing, and the last either
changes the fact ("First week at the bank went great") or only mentions it (a complaint, a
friend's move, a visit, a plan dropped, a restatement: a *non-change*, after which the fact
still holds). For each case the bench opens a fresh
`ReflectiveMemory.open(":memory:")` (default settings, no LLM; one embedder shared by all),
adds the sessions with `add_session(turns, user_id=, started_at=date)`, searches the
present-tense question (`k=5`) and, when the case has one, a past-tense question with
`as_of`. A hit holds a turn when the turn's id is in `hit.refs`. It reports, in percent:

- **current first**: the top hit holds a turn of the current answer (all cases);
- **stale marked**: a hit holds the old fact (and not the change) and is marked not current,
  `hit.current` being False (changes);
- **stale as current**: the top hit holds the old fact, not the change, and is not marked
  (changes: the failure an agent acts on);
- **non-change superseded**: a memory holding the fact is marked not current, or a hit
  holding it is marked at read time (non-changes);
- **past first**: the past question's top hit holds the old fact (cases with one).

The set ships as `rmm_core/data/updates_dev.jsonl`, one case per line:

    {"id": "u001", "kind": "job", "lang": "en", "change": true, "implicit": true,
     "partial": false, "non_change": null,
     "sessions": [{"date": "2023-02-10", "turns": [{"id": "u001-s1-t1", "speaker": "user",
                   "text": "I'm a barista at Blue Bottle"}, ...]}, {...}, {...}],
     "question": "Where do I work?",
     "fact": ["u001-s1-t1"], "update": ["u001-s3-t1"], "current": ["u001-s3-t1"],
     "past": {"question": "Where was I working in May 2023?", "as_of": "2023-05-01"}}

`kind` is what changes (residence, job, ...); `lang` an ISO 639-1 code, the question in the
same language; `implicit` marks a change that names neither the change nor the old value's
end (only its consequence); `partial` a change of part of the fact (a second cat);
`non_change` is null for a change, else what the last mention is instead (relative,
other-person, visit, hypothetical, dropped, restatement, past-story, complaint, plan,
question, negated-other, additional, temporary, anecdote, gift, helping, exception, mention,
confirmation). `fact` holds the turn ids (first session) stating the fact; `update` those of
later sessions that change it or, for a non-change, mention it; `current` those holding the
answer after the last session: the change's turns for a change, `fact` for a non-change.
`past` (optional) asks what held at `as_of`, a date between the fact and the last session;
its answer is the fact. `family` (optional) says how the case is told: "chat" (the
default), "long-message" (inside long messages) or "two-people" (two friends talking).

With an `llm`, each case's memory is opened with it and `JUDGED` (the change judge on,
extraction, reconciliation and segmentation LLM-free), so every LLM call is the judge's;
the figures' `llm` entry holds the calls, tokens, failures and seconds spent in them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError

CASES = files("rmm_core") / "data" / "updates_dev.jsonl"
FIELDS = {"id", "kind", "lang", "change", "implicit", "partial", "non_change", "sessions",
          "question", "fact", "update", "current", "past", "family"}
NON_CHANGES = ("relative", "other-person", "visit", "hypothetical", "dropped", "restatement",
               "past-story", "complaint", "plan", "question", "negated-other", "additional",
               "temporary", "anecdote", "gift", "helping", "exception", "mention",
               "confirmation")
SESSIONS = (3, 12)
"""Fewest and most sessions of a case."""
FIGURES = ("current_first", "stale_marked", "stale_as_current", "non_change_superseded",
           "past_first")
"""Each figure, in the order printed."""
HEADERS = ("current first", "stale marked", "stale as current", "non-change superseded",
           "past first")
USER = "bench"
JUDGED = {"stages.judge_changes": True, "stages.extraction": "segment",
          "stages.reconciliation": "threshold", "segmentation.kind": "embedding"}
"""The settings of a run with an LLM: the change judge is its only caller."""
LLM_TIMEOUT = 600.0
"""Seconds a judge call may take (a small local model on a few cores is slow)."""


@dataclass(frozen=True, slots=True)
class Case:
    """One labelled case: a fact, small talk, then a change or a non-change, and a question."""

    id: str
    kind: str
    lang: str
    change: bool
    implicit: bool
    partial: bool
    non_change: str | None
    sessions: tuple[tuple[str, tuple[dict[str, str], ...]], ...]
    question: str
    fact: frozenset[str]
    update: frozenset[str]
    current: frozenset[str]
    past: tuple[str, str] | None = None
    """(question, as_of) of the past-tense question, whose answer is the fact."""
    family: str = "chat"
    """How it is said: "chat", "long-message" (inside long messages), "two-people"."""


def load_cases(path: Any = None) -> list[Case]:
    """The cases of a JSON Lines file (default: the packaged set); a malformed line or an
    unknown field raises `InvalidInputError` naming its line number."""
    path = path or CASES
    cases, seen = [], set()
    for number, line in enumerate(Path(str(path)).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = _case(json.loads(line))
            if case.id in seen:
                raise InvalidInputError(f"case id {case.id!r} is repeated")
            seen.add(case.id)
            cases.append(case)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InvalidInputError(f"{path}:{number}: not an update case: {exc}") from exc
    return cases


def _case(row: dict[str, Any]) -> Case:
    unknown = set(row) - FIELDS
    if unknown:
        raise InvalidInputError(f"unknown field(s) {sorted(unknown)}")
    if not SESSIONS[0] <= len(row["sessions"]) <= SESSIONS[1]:
        raise InvalidInputError(f"{len(row['sessions'])} sessions, not {SESSIONS[0]} to "
                                f"{SESSIONS[1]}")
    sessions = []
    for s in row["sessions"]:
        turns = tuple({"id": str(t["id"]), "speaker": str(t["speaker"]), "text": str(t["text"])}
                      for t in s["turns"])
        if not turns:
            raise InvalidInputError("a session without turns")
        sessions.append((date.fromisoformat(s["date"]).isoformat(), turns))
    dates = [when for when, _ in sessions]
    if any(a >= b for a, b in zip(dates, dates[1:])):
        raise InvalidInputError("session dates are not in order")
    ids = [{t["id"] for t in turns} for _, turns in sessions]
    later = set().union(*ids[1:])
    fact, update, current = (frozenset(row[k]) for k in ("fact", "update", "current"))
    if not fact or not fact <= ids[0] or not update or not update <= later:
        raise InvalidInputError("`fact` must name turns of the first session, `update` of "
                                "later ones")
    change, non_change = bool(row["change"]), row["non_change"]
    if current != (update if change else fact) and not (change and current <= update):
        raise InvalidInputError("`current` must be in `update` for a change, `fact` otherwise")
    if change == (non_change is not None) or (non_change and non_change not in NON_CHANGES):
        raise InvalidInputError(f"non_change {non_change!r} does not fit change={change}")
    past = row.get("past")
    if past is not None:
        as_of = date.fromisoformat(past["as_of"]).isoformat()
        if not dates[0] <= as_of < dates[-1]:
            raise InvalidInputError(f"past as_of {as_of} is not between the fact and the change")
        past = (str(past["question"]), as_of)
    if not str(row["question"]).strip():
        raise InvalidInputError("empty question")
    return Case(str(row["id"]), str(row["kind"]), str(row["lang"]), change,
                bool(row["implicit"]), bool(row["partial"]), non_change, tuple(sessions),
                str(row["question"]), fact, update, current, past,
                str(row.get("family", "chat")))


def sample(cases: Sequence[Case], n: int) -> list[Case]:
    """About `n` of the cases, in their order: each stratum (change or not, English or
    not) gives its share of `n` (at least one), evenly spread over the stratum."""
    if n >= len(cases):
        return list(cases)
    strata: dict[tuple[bool, bool], list[int]] = {}
    for i, case in enumerate(cases):
        strata.setdefault((case.change, case.lang == "en"), []).append(i)
    kept: set[int] = set()
    for members in strata.values():
        share = max(1, round(n * len(members) / len(cases)))
        kept.update(members[int(j * len(members) / share)] for j in range(share))
    return [cases[i] for i in sorted(kept)]


def composition(cases: Sequence[Case]) -> dict[str, Any]:
    """The set's make-up: counts per kind, language and non-change, and the shares the set
    is held to (implicit among changes, non-English and non-changes among all)."""
    changes = [c for c in cases if c.change]
    return {"cases": len(cases), "changes": len(changes),
            "non_changes": len(cases) - len(changes),
            "kinds": _count(c.kind for c in cases), "langs": _count(c.lang for c in cases),
            "families": _count(c.family for c in cases),
            "non_change_kinds": _count(c.non_change for c in cases if c.non_change),
            "implicit_share": sum(c.implicit for c in changes) / max(1, len(changes)),
            "non_english_share": sum(c.lang != "en" for c in cases) / max(1, len(cases)),
            "non_change_share": (len(cases) - len(changes)) / max(1, len(cases)),
            "past_questions": sum(c.past is not None for c in cases)}


def _count(values: Iterable[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items(), key=lambda item: (-item[1], item[0])))


def holds(hit: Any, turns: frozenset[str]) -> bool:
    return bool(turns.intersection(hit.refs))


def ended(memory: Any) -> bool:
    """Whether a memory was recorded as no longer true as a whole (one changed in part
    still holds but for that part; a hit holding it says whether the question is about it,
    `marked`)."""
    return not memory.current and not memory.changed_part


def marked(hit: Any) -> bool:
    """Whether a hit says it no longer holds (`hit.current`: superseded on write, or read
    as an older version at search time)."""
    return not hit.current


def outcome(case: Case, hits: Sequence[Any], memories: Sequence[Any],
            past_hits: Sequence[Any] | None = None) -> dict[str, bool | None]:
    """One case's figures (None where a figure does not apply) from its search hits, every
    memory of its store and the past question's hits."""
    stale = [h for h in hits if holds(h, case.fact) and not holds(h, case.update)]
    top = hits[0] if hits else None
    top_stale = top is not None and top in stale
    return {
        "current_first": top is not None and holds(top, case.current),
        "stale_marked": any(marked(h) for h in stale) if case.change else None,
        "stale_as_current": (top_stale and not marked(top)) if case.change else None,
        "non_change_superseded": None if case.change else any(
            ended(m) for m in memories if case.fact.intersection(m.refs)) or any(
            marked(h) for h in hits if holds(h, case.fact)),
        "past_first": None if case.past is None else bool(past_hits) and holds(
            past_hits[0], case.fact) and not holds(past_hits[0], case.update)}


def stored_marks(case: Case, hits: Sequence[Any], memories: Sequence[Any]
                 ) -> dict[str, bool | None]:
    """The marks written on write only (a memory's `current`), without the read-time ones
    of `rmm_core.read.versions`: a stale hit's memory (changes), a memory holding the fact
    (non-changes)."""
    stale = [h for h in hits if holds(h, case.fact) and not holds(h, case.update)]
    return {"stale_marked": any(h.memory.current is False for h in stale) if case.change
            else None,
            "non_change_superseded": None if case.change else any(
                ended(m) for m in memories if case.fact.intersection(m.refs))}


def run_case(case: Case, embedder: Any, settings: dict[str, Any] | None = None,
             llm: Any = None) -> dict[str, Any]:
    """Add the case's sessions to a fresh in-memory store and search its questions (with
    `llm`, under the `JUDGED` settings)."""
    from ..memory import ReflectiveMemory

    if llm is not None:
        settings = {**JUDGED, **(settings or {})}
    mem = ReflectiveMemory.open(":memory:", embedder=embedder, llm=llm, **(settings or {}))
    try:
        for n, (when, turns) in enumerate(case.sessions, 1):
            mem.add_session(list(turns), user_id=USER, session_id=f"{case.id}-s{n}",
                            started_at=when)
        hits = list(mem.search(case.question, user_id=USER, k=5))
        past_hits = None if case.past is None else list(
            mem.search(case.past[0], user_id=USER, k=5, as_of=case.past[1]))
        memories = mem.memories(user_id=USER)
        row = outcome(case, hits, memories, past_hits)
        row["top"] = [list(h.refs) for h in hits[:2]]
        row["stored"] = stored_marks(case, hits, memories)
        return row
    finally:
        mem.close()


def evaluate(cases: Sequence[Case], embedder: Any, settings: dict[str, Any] | None = None,
             progress: Callable[[int], None] | None = None, llm: Any = None
             ) -> dict[str, Any]:
    """Every figure, overall, per group (changes, implicit, non-changes), kind and language,
    and each case's outcome, as `--json` writes them; with an `llm` (the change judge's,
    see `JUDGED`) also its usage, and each case's calls."""
    from ..models.llm import MeteredLLM, as_llm

    clock = meter = None
    if llm is not None:
        clock = Clocked(as_llm(llm))
        meter = MeteredLLM(clock, timeout=LLM_TIMEOUT, workers=1)
    rows = []
    for case in cases:
        before = meter.totals["calls"] if meter else 0
        row = {"id": case.id, **run_case(case, embedder, settings, meter)}
        if meter is not None:
            row["llm_calls"] = meter.totals["calls"] - before
        rows.append(row)
        if progress:
            progress(1)
    groups = {"all": list(range(len(cases))),
              "changes": [i for i, c in enumerate(cases) if c.change],
              "explicit changes": [i for i, c in enumerate(cases) if c.change and not c.implicit],
              "implicit changes": [i for i, c in enumerate(cases) if c.implicit],
              "non-changes": [i for i, c in enumerate(cases) if not c.change]}
    return {"cases": len(cases), "composition": composition(cases),
            "groups": {g: tally(rows, i) for g, i in groups.items()},
            "kinds": {k: tally(rows, [i for i, c in enumerate(cases) if c.kind == k])
                      for k in composition(cases)["kinds"]},
            "langs": {k: tally(rows, [i for i, c in enumerate(cases) if c.lang == k])
                      for k in composition(cases)["langs"]},
            "families": {k: tally(rows, [i for i, c in enumerate(cases) if c.family == k])
                         for k in composition(cases)["families"]},
            **({"llm": usage(meter, clock, llm)} if meter and clock else {}),
            "outcomes": rows}


class Clocked:
    """An LLM whose calls are timed: `seconds` is the time spent inside it."""

    def __init__(self, llm: Any) -> None:
        self.llm, self.seconds = llm, 0.0

    def complete_with_usage(self, prompt: str) -> tuple[str, dict[str, int]]:
        start = time.perf_counter()
        try:
            if hasattr(self.llm, "complete_with_usage"):
                return self.llm.complete_with_usage(prompt)
            if hasattr(self.llm, "complete"):
                return self.llm.complete(prompt), {}
            import asyncio

            return asyncio.run(self.llm.acomplete(prompt)), {}
        finally:
            self.seconds += time.perf_counter() - start


def usage(meter: Any, clock: Clocked, llm: Any) -> dict[str, Any]:
    """The judge's LLM use over a run: which model, calls, tokens, failures, seconds."""
    from .answer import llm_name

    calls = meter.totals["calls"]
    return {"model": llm_name(llm), **meter.totals, "seconds": round(clock.seconds, 1),
            "seconds_per_call": round(clock.seconds / calls, 2) if calls else None}


def tally(rows: Sequence[dict[str, Any]], indexes: Sequence[int]) -> dict[str, Any]:
    """The percent of each figure over the rows where it applies, and how many it applies
    to (`n_<figure>`); a figure that applies to none is None."""
    out: dict[str, Any] = {"n": len(indexes)}
    for figure in FIGURES:
        seen = [rows[i][figure] for i in indexes if rows[i][figure] is not None]
        out[figure] = 100.0 * sum(seen) / len(seen) if seen else None
        out[f"n_{figure}"] = len(seen)
    return out


def table(figures: dict[str, Any]) -> list[list[str]]:
    """The figures as rows (header first): each group, family, kind and language."""
    def cell(row: dict[str, Any], figure: str) -> str:
        value = row[figure]
        return "–" if value is None else f"{value:.0f} ({row[f'n_{figure}']})"

    rows = [["cases", "n", *HEADERS]]
    for section in ("groups", "families", "kinds", "langs"):
        for name, row in figures[section].items():
            rows.append([name, str(row["n"]), *(cell(row, f) for f in FIGURES)])
    return rows


NOTE = ("Percent of the cases each figure applies to (their number in brackets): **current "
        "first**, the top hit holds the current answer; **stale marked**, a hit holding the "
        "old fact is marked not current (changes); **stale as current**, the top hit is the "
        "old fact, unmarked (changes, lower is better); **non-change superseded**, the fact "
        "was marked changed by a turn that does not change it (lower is better); **past "
        "first**, the `as_of` question's top hit is the old fact.")


def report(figures: dict[str, Any]) -> str:
    """The figures as the terminal shows them."""
    from .report import text_table

    comp = figures["composition"]
    head = (f"{comp['cases']} cases: {comp['changes']} changes "
            f"({comp['implicit_share']:.0%} implicit), {comp['non_changes']} non-changes; "
            f"{comp['non_english_share']:.0%} not in English; {comp['past_questions']} past "
            f"questions")
    parts = [head, text_table(table(figures)), NOTE.replace("**", "")]
    if "llm" in figures:
        parts.append(llm_line(figures["llm"]))
    return "\n\n".join(parts)


def llm_line(used: dict[str, Any]) -> str:
    """The change judge's LLM use, in one sentence."""
    per = used["seconds_per_call"]
    return (f"change judge ({used['model']}): {used['calls']} calls, {used['failures']} "
            f"failed, {used['prompt_tokens']} prompt + {used['completion_tokens']} completion "
            f"tokens, {used['seconds']:.0f} s" + (f" ({per:.1f} s a call)" if per else ""))


def markdown(figures: dict[str, Any], command: str) -> str:
    """The figures as a markdown section between the markers of "supersede-search"."""
    from datetime import datetime, timezone

    from .report import machine, markdown_table, markers, version

    begin, end = markers("supersede-search")
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n\n".join([begin, f"`{command}`\n\n{when}; reflective-memory {version()}; "
                        f"{machine()}.", markdown_table(table(figures), bold="all"), NOTE,
                        *([llm_line(figures["llm"]) + "."] if "llm" in figures else []), end])
