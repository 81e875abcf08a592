"""Quickstart: ingest a multi-session conversation, then answer recall queries from memory.

Uses the sample conversation that ships with the package (Maya's five sessions with an
assistant); `--data PATH` takes a LoCoMo file instead (its first conversation). Runs offline
on the embedded SQLite store with the LLM-free pipeline.

    python cookbook/quickstart.py [--data locomo10.json] [--db memory.sqlite] [--questions 5]
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


def sample(limit: int) -> tuple[list[dict], list[tuple[str, list[str]]]]:
    """The packaged conversation's sessions and its questions with their gold turns."""
    questions = json.loads(sample_path().read_text())["questions"][:limit]
    print("Ingesting the sample conversation: Maya and her assistant, 5 sessions")
    return read_sessions(sample_path()), [(q["question"], q["evidence"]) for q in questions]


def locomo(path: str, limit: int) -> tuple[list[dict], list[tuple[str, list[str]]]]:
    """The first LoCoMo conversation's sessions and questions."""
    from rmm_core.bench.locomo import load_locomo

    conv = load_locomo(path, [0])[0]
    print(f"Ingesting LoCoMo {conv.sample_id}: {len(conv.sessions)} sessions between "
          f"{' and '.join(conv.speakers)}")
    return ([{"turns": s.turns, "session_id": s.session_id, "started_at": s.started_at}
             for s in conv.sessions],
            [(q.question, sorted(q.evidence)) for q in conv.questions[:limit]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="a LoCoMo JSON file (default: the sample)")
    parser.add_argument("--db", default=None, help="SQLite file (default: a temporary one)")
    parser.add_argument("--questions", type=int, default=5)
    args = parser.parse_args()
    db = args.db or str(Path(tempfile.mkdtemp()) / "quickstart.sqlite")
    mem = ReflectiveMemory.open(db)
    user = "demo"
    start = time.perf_counter()
    sessions, questions = locomo(args.data, args.questions) if args.data \
        else sample(args.questions)
    mem.add_sessions(sessions, user_id=user)
    print(f"{len(mem.turns(user_id=user))} turns -> {len(mem.memories(user_id=user))} memories "
          f"in {time.perf_counter() - start:.1f} s (store: {db})\n")
    for question, gold in questions:
        print(f"Q: {question}   (gold turns: {', '.join(gold)})")
        for hit in mem.search(question, user_id=user, k=2):
            shown = hit.text if len(hit.text) < 400 else hit.text[:400] + " ..."
            print(f"  [{hit.score:.2f}] from turns {', '.join(hit.refs)}")
            print("    " + shown.replace("\n", "\n    "))
        print()
    mem.close()


if __name__ == "__main__":
    main()
