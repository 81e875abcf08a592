"""Measure the largest write one call may make and how long it takes: an `add` at
`rmm mcp --max-call-chars` (a fact, then a conversation) through the real server over stdio,
and an `rmm import` of a file at `--max-bytes`. Prints one line per figure.

    HF_HUB_OFFLINE=1 python tests/mcp/measure_limits.py [--import-mib 256] [--folder DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from mcp_helpers import ENV, call, stdio_session

from rmm_core.mcp.tools import MAX_CALL_CHARS, MAX_MESSAGES

WORDS = "apple river stone cloud paper garden silver window market bridge violin".split()


def prose(chars: int, seed: int) -> str:
    """Distinct sentences, `chars` characters in all."""
    rnd, out, size = random.Random(seed), [], 0
    while size < chars:
        out.append(f"On day {len(out)} I saw the {rnd.choice(WORDS)} near the "
                   f"{rnd.choice(WORDS)}, {rnd.randint(1, 999)} metres away.")
        size += len(out[-1]) + 1
    return " ".join(out)[:chars]


async def measure_adds(db: Path) -> None:
    async with stdio_session(db, "--user", "u") as s:
        for n in range(1, 5):  # the user grows by each call's memories
            started = time.perf_counter()
            added = await call(s, "add", content=prose(MAX_CALL_CHARS, n))
            print(f"add fact {n} of {MAX_CALL_CHARS:,} chars: {len(added['added'])} memories "
                  f"in {time.perf_counter() - started:.1f} s")
        text = prose(MAX_CALL_CHARS - MAX_MESSAGES * 4, 9)  # "user" counts as each speaker
        step = len(text) // MAX_MESSAGES + 1
        messages = [{"role": "user", "content": text[i:i + step]}
                    for i in range(0, len(text), step)]
        started = time.perf_counter()
        added = await call(s, "add", content=messages)
        print(f"add conversation of {len(messages)} messages, {MAX_CALL_CHARS:,} chars: "
              f"{len(added['added'])} memories in {time.perf_counter() - started:.1f} s")


def export_file(path: Path, mib: int) -> int:
    """A synthetic export of about `mib` MiB: one session, one turn and one 384-d memory per
    record group. Returns its memory count."""
    rnd = np.random.default_rng(0)
    target, n, size = mib * 1024 * 1024, 0, 0
    memories = []
    while size < target * 0.98:
        vector = base64.b64encode(rnd.standard_normal((1, 384)).astype(np.float32).tobytes())
        text = prose(200, n)
        record = {"type": "memory", "id": f"m{n}", "text": text, "key": text[:60],
                  "refs": [f"s:{n + 1}"], "speakers": ["user"], "session_ids": ["s"],
                  "occurred_at": None, "created_at": "2024-01-01T00:00:00+00:00",
                  "updated_at": "2024-01-01T00:00:00+00:00", "attrs": {}, "metadata": {},
                  "validity": {}, "versions": [{"version": 1, "text": text,
                                                "refs": [f"s:{n + 1}"], "reason": "created",
                                                "at": "2024-01-01T00:00:00+00:00",
                                                "source": "reflection"}],
                  "vector_shape": [1, 384], "vectors": vector.decode()}
        line = json.dumps(record) + "\n"
        memories.append(line)
        size += len(line) + 150  # and its turn
        n += 1
    with path.open("w") as f:
        f.write(json.dumps({"type": "header", "format": "rmm-export", "version": 1,
                            "user_id": "big", "sessions": 1, "memories": n}) + "\n")
        f.write(json.dumps({"type": "session", "session_id": "s", "status": "done",
                            "started_at": None, "last_activity": 0.0, "n_turns": n,
                            "reflected": n, "metadata": {}}) + "\n")
        for i in range(n):
            f.write(json.dumps({"type": "turn", "session_id": "s", "id": f"s:{i + 1}",
                                "speaker": "user", "text": prose(100, i),
                                "timestamp": None}) + "\n")
        f.writelines(memories)
    return n


def measure_import(folder: Path, mib: int) -> None:
    path = folder / "big.jsonl"
    n = export_file(path, mib)
    db = folder / "import.sqlite"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rmm_core.cli", "--no-progress", "--db",
                           str(db), "import", str(path)], env=ENV, capture_output=True,
                          text=True)
    print(f"import of {path.stat().st_size / 2**20:.0f} MiB ({n:,} memories): exit "
          f"{done.returncode} in {time.perf_counter() - started:.1f} s "
          f"{done.stderr.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--import-mib", type=int, default=256)
    parser.add_argument("--folder", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.folder or Path(scratch)
        asyncio.run(measure_adds(folder / "add.sqlite"))
        measure_import(folder, args.import_mib)


if __name__ == "__main__":
    main()
