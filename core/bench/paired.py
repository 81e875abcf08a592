"""`rmm bench paired`: what a setting costs in ingest and search time, measured against the
defaults in the same process, session by session and query by query in turn (A B, then
B A, ...), so that a machine whose speed drifts moves both sides alike."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from ..config import MemoryConfig
from ..memory import ReflectiveMemory
from ..models.embed import default_embedder
from ..ops.commands import BAD_DATA
from ..ops.progress import progress
from .datasets import LOADERS, load_args
from .retrieval import parse_range, parse_setting


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", choices=sorted(LOADERS), default="locomo")
    parser.add_argument("--data", required=True, help="as `rmm bench retrieval --data`")
    parser.add_argument("--convs", default=None, help="conversation positions, e.g. 0-1")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        required=True, help="the setting(s) of side B; side A is the defaults")
    parser.add_argument("--repeat", type=int, default=3,
                        help="searches of each question per side (default 3)")


def run(args: argparse.Namespace) -> int:
    convs = load_args(args.dataset, args.data, parse_range(args.convs) if args.convs else None)
    if convs is None:
        return BAD_DATA
    sides = {"A": {}, "B": dict(parse_setting(s) for s in args.set)}
    ingest = {side: 0.0 for side in sides}
    search: dict[str, list[float]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as tmp:
        # each side's own embedder (`embedding.model` may be the setting compared), shared
        # with the other side when it is the same model
        mems = {side: ReflectiveMemory.open(
                    str(Path(tmp) / f"{side}.sqlite"), progress=False, **settings,
                    embedder=default_embedder(MemoryConfig(**settings).embedding.model))
                for side, settings in sides.items()}
        for conv in convs:
            for i, session in enumerate(progress(conv.sessions, unit="session",
                                                 desc=f"{conv.sample_id} sessions")):
                for side, mem in _turn(mems, i):
                    start = time.perf_counter()
                    mem.add_session(session.turns, user_id=conv.sample_id,
                                    session_id=session.session_id,
                                    started_at=session.started_at)
                    ingest[side] += time.perf_counter() - start
            for i, q in enumerate(progress(conv.questions * args.repeat, unit="question",
                                           desc=f"{conv.sample_id} questions")):
                for side, mem in _turn(mems, i):
                    start = time.perf_counter()
                    mem.search(q.question, user_id=conv.sample_id, k=5)
                    search[side].append(time.perf_counter() - start)
        for mem in mems.values():
            mem.close()
    p50 = {side: 1000 * float(np.percentile(t, 50)) for side, t in search.items()}
    p95 = {side: 1000 * float(np.percentile(t, 95)) for side, t in search.items()}
    print(f"A: defaults; B: {' '.join(args.set)}; {len(convs)} conversations, "
          f"{len(search['A'])} searches per side, in turn")
    print(f"ingest      A {ingest['A']:.1f} s   B {ingest['B']:.1f} s   "
          f"B/A {ingest['B'] / ingest['A']:.3f}")
    print(f"search p50  A {p50['A']:.2f} ms   B {p50['B']:.2f} ms   "
          f"B/A {p50['B'] / p50['A']:.3f}")
    print(f"search p95  A {p95['A']:.2f} ms   B {p95['B']:.2f} ms   "
          f"B/A {p95['B'] / p95['A']:.3f}")
    return 0


def _turn(mems: dict[str, ReflectiveMemory], i: int) -> list[tuple[str, ReflectiveMemory]]:
    """Both sides, A first on even steps and B first on odd ones: whatever the first call
    warms up for the second is shared out evenly."""
    items = list(mems.items())
    return items if i % 2 == 0 else items[::-1]
