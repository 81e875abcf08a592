"""`rmm bench links`: A-MEM link following on LoCoMo multi-hop questions (category 1).

One ingest per conversation with notes on (LLM-free unless configured otherwise), then each
multi-hop question is searched twice on the same bank, without and with `follow_links`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ..config import MemoryConfig
from ..memory import ReflectiveMemory
from ..models.embed import default_embedder
from .locomo import ingest, load_locomo
from .metrics import r_all, r_any, r_tok
from .retrieval import parse_range, parse_setting

DEPTH = 100
MULTI_HOP = 1
METRICS = {
    "R_any@5": lambda ranked, gold: r_any(ranked, gold, 5),
    "R_all@5": lambda ranked, gold: r_all(ranked, gold, 5),
    "Rtok@1000": lambda ranked, gold: r_tok(ranked, gold, 1000),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="path of locomo10.json (or the dev file)")
    parser.add_argument("--convs", default=None, help="conversations to use, e.g. 0-4 or 0,2")
    parser.add_argument("--json", dest="json_out", default=None, help="write figures here")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="MemoryConfig override (repeatable); notes.enabled=true is always "
                             "set")


def run(args: argparse.Namespace) -> int:
    convs = load_locomo(args.data, parse_range(args.convs) if args.convs else None)
    settings = {**dict(parse_setting(s) for s in args.set), "notes.enabled": True}
    rows, info = evaluate_links(convs, settings)
    print(f"LoCoMo multi-hop (category {MULTI_HOP}): {info['questions']} questions, "
          f"{len(convs)} conversations; {info['links/memory']:.2f} links per memory, "
          f"ingest {info['ingest s']:.0f} s")
    head = f"{'search':<20}" + "".join(f"{m:>12}" for m in METRICS)
    print(head + "\n" + "-" * len(head))
    for name, row in rows.items():
        print(f"{name:<20}" + "".join(f"{row[m]:>12.1f}" for m in METRICS))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"rows": rows, **info}, indent=2))
    return 0



def evaluate_links(convs: list, settings: dict[str, Any]) -> tuple[dict, dict]:
    """Per-metric means (percent) without and with link following, plus run facts."""
    embedder = default_embedder(MemoryConfig(**settings).embedding.model)
    scores: dict[str, dict[str, list[float]]] = {"plain": defaultdict(list),
                                                "follow_links": defaultdict(list)}
    links, memories, ingest_s = 0, 0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        mem = ReflectiveMemory.open(str(Path(tmp) / "links.sqlite"), embedder=embedder,
                                    progress=False, **settings)
        for conv in convs:
            ingest_s += ingest(mem, conv)
            bank = mem.memories(user_id=conv.sample_id)
            memories += len(bank)
            links += sum(len(m.attrs.get("links", [])) for m in bank)
            for q in (q for q in conv.questions if q.category == MULTI_HOP):
                for name, follow in (("plain", False), ("follow_links", True)):
                    ranked = [(h.text, h.refs) for h in mem.search(
                        q.question, user_id=conv.sample_id, k=DEPTH, follow_links=follow)]
                    for metric, fn in METRICS.items():
                        scores[name][metric].append(fn(ranked, q.evidence))
        mem.close()
    rows = {name: {m: 100 * float(np.mean(v[m])) for m in METRICS} for name, v in scores.items()}
    info = {"questions": len(scores["plain"]["R_any@5"]), "ingest s": ingest_s,
            "links/memory": links / max(memories, 1), "settings": settings}
    return rows, info
