"""Search latency with and without open (unreflected) turns: the cost of immediate recall.

Feeds the first LoCoMo dev conversation as reflected sessions but its last `--open` turns,
which are appended to an open session; then times every question's search (k=5) with
immediate recall on and off, alternating (so both see the same machine load). Each open
turn is embedded once, on the first search after it was appended (timed apart).

    python scripts/open_turns_speed.py ../shared/data/locomo/locomo10_dev.json --open 40
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rmm_core import ReflectiveMemory
from rmm_core.bench.datasets import load


def timed_search(mem: ReflectiveMemory, question: str) -> tuple[float, int]:
    """Milliseconds of one search, and how many of its hits are provisional."""
    start = time.perf_counter()
    hits = mem.search(question, user_id="u", k=5)
    elapsed = (time.perf_counter() - start) * 1000
    return elapsed, sum(bool(h.memory.attrs.get("provisional")) for h in hits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--open", type=int, default=40, help="open turns during the second run")
    args = parser.parse_args()
    conv = load("locomo", args.data, [0])[0]
    turns = [t for s in conv.sessions for t in s.turns]
    keep = len(turns) - args.open
    questions = [q.question for q in conv.questions]
    with tempfile.TemporaryDirectory() as folder:
        mem = ReflectiveMemory.open(str(Path(folder) / "m.sqlite"))
        done = 0
        for s in conv.sessions:
            part = s.turns[:max(0, keep - done)]
            done += len(s.turns)
            if part:
                mem.add_session(part, user_id="u", session_id=s.session_id,
                                started_at=s.started_at)
        for q in questions[:10]:  # warm-up: index and BM25 built
            timed_search(mem, q)
        mem.append(turns[keep:], user_id="u", session_id="open")
        first = timed_search(mem, questions[0])[0]
        base, with_open = [], []
        for q in questions:
            mem.config.search.immediate_recall = False
            base.append(timed_search(mem, q)[0])
            mem.config.search.immediate_recall = True
            with_open.append(timed_search(mem, q))
        mem.close()
    provisional = sum(n for _, n in with_open)
    with_open = [ms for ms, _ in with_open]
    for name, times in (("recall off", base), (f"{args.open} open turns", with_open)):
        times = sorted(times)
        print(f"{name:>16}: p50 {statistics.median(times):.2f} ms, "
              f"p95 {times[int(0.95 * len(times))]:.2f} ms ({len(times)} searches)")
    print(f"first search after appending {args.open} turns (embeds them): {first:.1f} ms; "
          f"{provisional} provisional hits in the top 5 of {len(questions)} searches")


if __name__ == "__main__":
    main()
