"""`rmm bench supersede --mentions`: the base rate of false changes.

People mention what they already told the memory many times for every time it changes. Each
line of the set is one person's stable fact, twenty everyday later messages that name its
thing and change nothing (a complaint, an anecdote, a one-off exception, a plan dropped, a
week away, someone else's news, a question), and one real change. For each fact the bench
opens a fresh `ReflectiveMemory.open(":memory:")` (default settings, no LLM), adds the fact
and then each mention as a session of its own, `GAP` apart, and after 1, 5 and 20 mentions
asks the present-tense question (`search(k=5)`). Beside that, in a store of its own for each
count, the same fact and mentions followed by the change. It reports, in percent:

- **marked**: the fact is marked no longer current (its memory on write, or a hit holding
  it at read time) though nothing changed (stable facts);
- **pushed down**: a read step moved the fact below where the reranker put it (stable
  facts): below a mention, since the mentions are all there is besides;
- **outranked**: the top hit does not hold the fact, for any reason (stable facts; the
  ranking itself may prefer a mention: "ledgerly standup went 50 minutes" for "where does
  Maya work?");
- **current first**: the top hit holds the change (changes);
- **stale marked**: a hit holding the fact, and not the change, is marked (changes).

The set ships as `rmm_core/data/mentions.jsonl`, one fact per line:

    {"id": "en-003", "lang": "en", "kind": "vehicle", "speaker": "user",
     "fact": "finally got my own car!! a blue VW Golf", "question": "What car do I drive?",
     "mentions": [{"text": "ugh the golf is grinding again", "type": "complaint"}, ...],
     "change": "sold the golf, I'm driving a secondhand Model 3 now",
     "changed_question": "What car do I drive?"}

`speaker` is "user" (a chat with an assistant) or a first name (two friends talking: the
question names them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ..ops.progress import progress
from .supersede_search import ended, holds, marked

CASES = files("rmm_core") / "data" / "mentions.jsonl"
COUNTS = (1, 5, 20)
"""After how many mentions the question is asked."""
START = date(2024, 1, 8)
GAP = timedelta(days=9)
"""Time between two messages: weeks of everyday life."""
USER = "bench"
FIELDS = {"id", "lang", "kind", "speaker", "fact", "question", "mentions", "change",
          "changed_question"}
FIGURES = ("marked", "pushed_down", "outranked", "current_first", "stale_marked")
HEADERS = ("stable marked", "stable pushed down", "stable outranked", "change current first",
           "change stale marked")


@dataclass(frozen=True, slots=True)
class Fact:
    """A stable fact, its everyday mentions and one real change."""

    id: str
    lang: str
    kind: str
    speaker: str
    fact: str
    question: str
    mentions: tuple[tuple[str, str], ...]
    """(text, type) of each mention, in the order they are said."""
    change: str
    changed_question: str


def load_facts(path: Any = None) -> list[Fact]:
    """The facts of a JSON Lines file (default: the packaged set); a malformed line raises
    `InvalidInputError` naming its line number."""
    path = path or CASES
    out, seen = [], set()
    for number, line in enumerate(Path(str(path)).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            unknown, missing = set(row) - FIELDS, FIELDS - set(row)
            if unknown or missing:
                raise InvalidInputError(f"unknown field(s) {sorted(unknown)}, missing "
                                        f"{sorted(missing)}")
            mentions = tuple((str(m["text"]), str(m["type"])) for m in row["mentions"])
            if len(mentions) < max(COUNTS):
                raise InvalidInputError(f"{len(mentions)} mentions, fewer than {max(COUNTS)}")
            texts = [row["fact"], row["question"], row["change"], row["changed_question"],
                     *(t for t, _ in mentions)]
            if not all(isinstance(t, str) and t.strip() for t in texts):
                raise InvalidInputError("an empty text")
            if row["id"] in seen:
                raise InvalidInputError(f"id {row['id']!r} is repeated")
            seen.add(row["id"])
            out.append(Fact(str(row["id"]), str(row["lang"]), str(row["kind"]),
                            str(row["speaker"]), row["fact"], row["question"], mentions,
                            row["change"], row["changed_question"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInputError(f"{path}:{number}: not a fact line: {exc}") from exc
    return out


def run_fact(fact: Fact, embedder: Any, counts: Sequence[int] = COUNTS,
             settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """One fact's outcomes: after each count of mentions, the stable fact's (`stable`) and
    the change's (`changed`)."""
    from ..memory import ReflectiveMemory

    def opened() -> Any:
        return ReflectiveMemory.open(":memory:", embedder=embedder, **(settings or {}))

    def say(mem: Any, n: int, text: str) -> str:
        turn = f"{fact.id}-{n}"
        mem.add_session([{"id": turn, "speaker": fact.speaker, "text": text}], user_id=USER,
                        session_id=turn, started_at=(START + n * GAP).isoformat())
        return turn

    out: dict[str, Any] = {"id": fact.id, "stable": {}, "changed": {}}
    with opened() as mem:
        said = [say(mem, 0, fact.fact)]
        for count in sorted(counts):
            for n in range(len(said), count + 1):
                said.append(say(mem, n, fact.mentions[n - 1][0]))
            found = mem.search(fact.question, user_id=USER, k=5, explain=True)
            out["stable"][count] = _stable(frozenset(said[:1]), list(found),
                                           mem.memories(user_id=USER), found.explanation)
    for count in counts:
        with opened() as mem:
            first = say(mem, 0, fact.fact)
            for n in range(1, count + 1):
                say(mem, n, fact.mentions[n - 1][0])
            change = say(mem, count + 1, fact.change)
            hits = list(mem.search(fact.changed_question, user_id=USER, k=5))
            out["changed"][count] = _changed(frozenset([first]), frozenset([change]), hits,
                                             mem.memories(user_id=USER))
    return out


def _stable(fact: frozenset[str], hits: Sequence[Any], memories: Sequence[Any],
            explained: Any) -> dict[str, bool]:
    held = {m.id for m in memories if fact.intersection(m.refs)}
    return {"marked": any(ended(m) for m in memories if m.id in held) or
            any(marked(h) for h in hits if holds(h, fact)),
            "pushed_down": any(row.memory_id in held and row.rerank_rank is not None and (
                row.rerank_rank < row.final_rank if row.final_rank is not None
                else row.rerank_rank <= len(hits)) for row in explained.rows),
            "outranked": not hits or not holds(hits[0], fact)}


def _changed(fact: frozenset[str], change: frozenset[str], hits: Sequence[Any],
             memories: Sequence[Any]) -> dict[str, bool]:
    stale = [h for h in hits if holds(h, fact) and not holds(h, change)]
    return {"current_first": bool(hits) and holds(hits[0], change),
            "stale_marked": any(marked(h) for h in stale) or
            any(ended(m) for m in memories
                if fact.intersection(m.refs) and not change.intersection(m.refs))}


def evaluate(facts: Sequence[Fact], embedder: Any, counts: Sequence[int] = COUNTS,
             settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every figure per count of mentions, overall and per language, and each fact's
    outcomes, as `--json` writes them."""
    rows = [run_fact(fact, embedder, counts, settings)
            for fact in progress(facts, desc="facts", unit="fact")]
    langs = sorted({f.lang for f in facts})

    def figures(indexes: Sequence[int], count: int) -> dict[str, Any]:
        picked = [rows[i] for i in indexes]
        out: dict[str, Any] = {"n": len(picked)}
        for side, names in (("stable", FIGURES[:3]), ("changed", FIGURES[3:])):
            for name in names:
                seen = [r[side][count][name] for r in picked]
                out[name] = 100.0 * sum(seen) / len(seen) if seen else None
        return out

    every = list(range(len(facts)))
    return {"facts": len(facts), "counts": list(counts),
            "all": {c: figures(every, c) for c in counts},
            "langs": {lang: {c: figures([i for i, f in enumerate(facts) if f.lang == lang], c)
                             for c in counts} for lang in langs},
            "outcomes": rows}


def table(figures: dict[str, Any]) -> list[list[str]]:
    """Rows (header first): each count of mentions over all facts, then each language at
    the largest count."""
    def cells(row: dict[str, Any]) -> list[str]:
        return ["–" if row[f] is None else f"{row[f]:.1f}" for f in FIGURES]

    top = max(figures["counts"])
    rows = [["facts", "mentions", "n", *HEADERS]]
    rows += [["all", str(c), str(figures["all"][c]["n"]), *cells(figures["all"][c])]
             for c in figures["counts"]]
    rows += [[lang, str(top), str(by[top]["n"]), *cells(by[top])]
             for lang, by in figures["langs"].items()]
    return rows


NOTE = ("Percent of the facts: stable marked, the fact is marked changed though nothing "
        "changed it (lower is better); stable pushed down, a read step moved the fact below a "
        "mention (lower is better); stable outranked, the top hit is not the fact, for any "
        "reason; change current first, after the mentions and then a real change, the top hit "
        "is the change; change stale marked, a hit holding the old fact is marked.")


def report(figures: dict[str, Any]) -> str:
    """The figures as the terminal shows them."""
    from .report import text_table

    return "\n\n".join([f"{figures['facts']} facts, each after 1, 5 and 20 everyday mentions",
                        text_table(table(figures)), NOTE])
