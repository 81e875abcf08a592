"""Quickstart: ingest a multi-session conversation, then answer recall queries from memory.

Uses the first LoCoMo conversation when the file is there (pass --data PATH, default
../shared/data/locomo/locomo10_dev.json), else a short built-in conversation. Runs offline
on the embedded SQLite store with the LLM-free pipeline.

    python cookbook/quickstart.py [--data PATH] [--db memory.sqlite] [--questions 5]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rmm_core import ReflectiveMemory, Turn  # noqa: E402
from rmm_core.bench.locomo import load_locomo  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared/data/locomo/locomo10_dev.json"

BUILT_IN = [
    ("2024-03-02T18:00", [
        ("Ana", "I finally adopted a dog from the shelter, a beagle called Biscuit."),
        ("Sam", "Congratulations! How old is Biscuit?"),
        ("Ana", "Three years old. He hates the rain but loves the park by the river."),
    ]),
    ("2024-04-11T09:30", [
        ("Sam", "How is the new job at the hospital going?"),
        ("Ana", "Great. I work night shifts in the children's ward, Tuesday to Friday."),
        ("Sam", "Night shifts sound tough. Do you still have time for your pottery class?"),
        ("Ana", "Only on Saturdays now; I made a blue vase last week."),
    ]),
    ("2024-05-20T20:15", [
        ("Ana", "Biscuit and I ran our first 5k charity race on Sunday!"),
        ("Sam", "Amazing, what was the charity?"),
        ("Ana", "The animal shelter where I adopted him."),
    ]),
]
BUILT_IN_QUESTIONS = ["What kind of dog did Ana adopt?", "Which days does Ana work?",
                      "What did Ana make in pottery class?", "Which race did Ana run?"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--db", default=None, help="SQLite file (default: a temporary one)")
    parser.add_argument("--questions", type=int, default=5)
    args = parser.parse_args()
    db = args.db or str(Path(tempfile.mkdtemp()) / "quickstart.sqlite")
    mem = ReflectiveMemory.open(db)
    user = "demo"
    start = time.perf_counter()
    if Path(args.data).is_file():
        conv = load_locomo(args.data, [0])[0]
        print(f"Ingesting LoCoMo {conv.sample_id}: {len(conv.sessions)} sessions between "
              f"{' and '.join(conv.speakers)}")
        mem.add_sessions([{"turns": s.turns, "session_id": s.session_id,
                           "started_at": s.started_at} for s in conv.sessions], user_id=user)
        questions = [(q.question, sorted(q.evidence)) for q in conv.questions[: args.questions]]
    else:
        print("LoCoMo file not found; using the built-in conversation")
        for n, (when, turns) in enumerate(BUILT_IN, start=1):
            mem.add_session([Turn(s, t, id=f"S{n}:{i}") for i, (s, t) in enumerate(turns, 1)],
                            user_id=user, session_id=f"session_{n}", started_at=when)
        questions = [(q, []) for q in BUILT_IN_QUESTIONS[: args.questions]]
    n_turns = len(mem.turns(user_id=user))
    print(f"{n_turns} turns -> {len(mem.memories(user_id=user))} memories "
          f"in {time.perf_counter() - start:.1f} s (store: {db})\n")
    for question, gold in questions:
        print(f"Q: {question}" + (f"   (gold turns: {', '.join(gold)})" if gold else ""))
        for hit in mem.search(question, user_id=user, k=2):
            shown = hit.text if len(hit.text) < 400 else hit.text[:400] + " ..."
            print(f"  [{hit.score:.2f}] from turns {', '.join(hit.refs)}")
            print("    " + shown.replace("\n", "\n    "))
        print()
    mem.close()


if __name__ == "__main__":
    main()
