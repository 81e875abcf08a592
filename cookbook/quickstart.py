"""Quickstart: ingest a multi-session conversation, then answer recall queries from memory.

Uses the sample conversation that ships with the package (Maya's five sessions with an
assistant); `--data PATH` takes your own conversation file instead, in the form `rmm add`
reads (the sample's form: `{"sessions": [...], "questions": [...]}`, questions optional).
Each question's gold turns (its `evidence`) are checked against the hits' source turns:
a line says whether the hits hold them, and the last line how many questions they did.
Runs offline on the embedded SQLite store with the LLM-free pipeline.

    python cookbook/quickstart.py [--data conversation.json] [--db memory.sqlite] [--questions 5]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rmm_core import ReflectiveMemory  # noqa: E402
from rmm_core.ops.sessions_file import read_sessions, sample_path  # noqa: E402


def conversation(path: Path, limit: int) -> tuple[list[dict], list[tuple[str, list[str]]]]:
    """A conversation file's sessions, and its questions with their gold turns if it has
    any (a JSON object's `questions`, each `{"question", "evidence": [turn ids]}`)."""
    sessions = read_sessions(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:  # JSON Lines: sessions only
        data = {}
    questions = data.get("questions", []) if isinstance(data, dict) else []
    return sessions, [(q["question"], q["evidence"]) for q in questions[:limit]]


K = 2
"""Hits shown per question."""


def gold_verdict(gold: list[str], refs: list[list[str]]) -> tuple[str, bool]:
    """Whether the hits (each one's source turns) hold every gold turn, in words: which hit
    holds each, and which none does."""
    place = {}
    for n, turns in enumerate(refs, 1):
        for turn in turns:
            place.setdefault(turn, n)
    held = [f"{g} in hit {place[g]}" for g in gold if g in place]
    missed = [g for g in gold if g not in place]
    if not missed:
        return "found: " + ", ".join(held), True
    return f"missed: no hit holds {', '.join(missed)}" + \
        (f" (found {', '.join(held)})" if held else ""), False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None,
                        help="a conversation file as `rmm add` reads it (default: the sample)")
    parser.add_argument("--db", default=None, help="SQLite file (default: a temporary one)")
    parser.add_argument("--questions", type=int, default=5)
    args = parser.parse_args()
    db = args.db or str(Path(tempfile.mkdtemp()) / "quickstart.sqlite")
    mem = ReflectiveMemory.open(db)
    user = "demo"
    start = time.perf_counter()
    path = Path(args.data) if args.data else sample_path()
    sessions, questions = conversation(path, args.questions)
    print("Ingesting " + ("the sample conversation: Maya and her assistant"
                          if args.data is None else str(path)) + f", {len(sessions)} sessions")
    mem.add_sessions(sessions, user_id=user)
    print(f"{len(mem.turns(user_id=user))} turns -> {len(mem.memories(user_id=user))} memories "
          f"in {time.perf_counter() - start:.1f} s (store: {db})\n")
    found = 0
    for question, gold in questions:
        print(f"Q: {question}   (gold turns: {', '.join(gold)})")
        hits = mem.search(question, user_id=user, k=K)
        for hit in hits:
            shown = hit.text if len(hit.text) < 400 else hit.text[:400] + " ..."
            print(f"  [{hit.score:.2f}] from turns {', '.join(hit.refs)}")
            print("    " + shown.replace("\n", "\n    "))
        verdict, held = gold_verdict(gold, [hit.refs for hit in hits])
        found += held
        print(f"  -> {verdict}\n")
    if questions:
        print(f"Gold turns found for {found} of {len(questions)} questions in the top {K} "
              "hits.")
    mem.close()


if __name__ == "__main__":
    main()
