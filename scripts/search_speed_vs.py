"""Search p50 of this checkout against an earlier commit's, each in processes of its own.

The earlier commit's package (`git archive REV core`) is unpacked as `rmm_core` into a
temporary folder put first on PYTHONPATH. Each side ingests the conversations into a store
of its own once; then, round by round with the sides in alternating order, one process per
side and call searches once to load, then asks every question three times: the first pass
is cold (each question new, the memories' tokens and traits not cached yet), the other two
warm. A round's ratio is each call's p50 over the earlier commit's first call of the same
round; the figure is the median over the rounds (the machine's speed drifts between
rounds, not within one).

    python scripts/search_speed_vs.py cbcf131 --dataset beam --data ../shared/data/beam/100K \\
        --convs 0,1 --rounds 6 --call 'k=5' --call 'max_words=1000'
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker(args: argparse.Namespace) -> None:
    """One side in one process: ingest into the store, or time the searches of one call."""
    import numpy as np

    import rmm_core
    from rmm_core.bench.datasets import load

    conversations = load(args.dataset, args.data, [int(c) for c in args.convs.split(",")])
    mem = rmm_core.ReflectiveMemory.open(args.store, progress=False)
    if args.worker == "ingest":
        for conv in conversations:
            for s in conv.sessions:
                mem.add_session(s.turns, user_id=conv.sample_id, session_id=s.session_id,
                                started_at=s.started_at)
    else:
        call = json.loads(args.worker)
        mem.search("load the index and the embedder", user_id=conversations[0].sample_id, **call)
        passes = []
        for _ in range(3):
            times = []
            for conv in conversations:
                for q in conv.questions:
                    start = time.perf_counter()
                    mem.search(q.question, user_id=conv.sample_id, **call)
                    times.append(time.perf_counter() - start)
            passes.append(1000 * float(np.percentile(times, 50)))
        print(json.dumps({"cold": passes[0], "warm": (passes[1] + passes[2]) / 2}))
    mem.close()


def run_side(args: argparse.Namespace, path: str | None, store: Path, work: str) -> str:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("PYTHONPATH", None)
    if path:
        env["PYTHONPATH"] = path
    command = [sys.executable, __file__, "--worker", work, "--dataset", args.dataset,
               "--data", str(Path(args.data).resolve()), "--convs", args.convs,
               "--store", str(store)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return done.stdout


def unpack(rev: str, folder: Path) -> Path:
    """`rev`'s `core/` as the package `rmm_core` below `folder`; returns what to put on
    PYTHONPATH."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "core"],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # 3.10.12+
        tar.extractall(folder, **safe)
    (folder / "core").rename(folder / "rmm_core")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", help="the earlier commit")
    parser.add_argument("--dataset", default="locomo")
    parser.add_argument("--data", required=True)
    parser.add_argument("--convs", default="0,1", help="conversation positions, e.g. 0,1")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--call", action="append", default=[], metavar="NAME=VALUE",
                        help="a search call of this checkout, e.g. k=5 or max_words=1000 "
                             "(repeatable; default k=5); the earlier commit's is k=5")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if not args.rev:
        parser.error("name the earlier commit")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        old = str(unpack(args.rev, folder / "old"))
        sides = [(f"{args.rev} k=5", old, folder / "old.sqlite", {"k": 5})]
        for call in args.call or ["k=5"]:
            name, _, value = call.partition("=")
            sides.append((f"now {call}", None, folder / "now.sqlite", {name: int(value)}))
        for path, store in ((old, folder / "old.sqlite"), (None, folder / "now.sqlite")):
            run_side(args, path, store, "ingest")
        figures: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in sides}
        for round_ in range(args.rounds):
            for name, path, store, call in sides if round_ % 2 == 0 else sides[::-1]:
                figures[name].append(json.loads(run_side(args, path, store, json.dumps(call))))
    base = sides[0][0]
    for name, *_ in sides:
        cold = [f["cold"] for f in figures[name]]
        warm = [f["warm"] for f in figures[name]]
        line = (f"{name:24s} warm p50 {min(warm):.2f}-{max(warm):.2f} ms, "
                f"cold {min(cold):.2f}-{max(cold):.2f} ms")
        if name != base:
            ratio = {kind: statistics.median(f[kind] / b[kind] for f, b in
                                             zip(figures[name], figures[base]))
                     for kind in ("warm", "cold")}
            line += f"; against {base}: warm {ratio['warm']:.2f}x, cold {ratio['cold']:.2f}x"
        print(line)


if __name__ == "__main__":
    main()
