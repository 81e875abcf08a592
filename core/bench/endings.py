"""`rmm bench endings`: every change recorded on write in real conversations, to be read.

Each conversation is fed through the public API as one user (default settings, no LLM), then
every memory the write rules ended is listed beside the memory that ended it, with counts per
conversation: memories, endings, and the most memories one memory ended. No labels exist for
these: the list is for a person to read and judge, the counts are the base rate.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from ..memory import ReflectiveMemory
from ..models.embed import default_embedder
from .datasets import LOADERS, load_args
from .records import Conversation, ingest
from .retrieval import parse_range

QUOTE = 240
"""Characters of each memory printed."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", choices=sorted(LOADERS), default="locomo",
                        help="how to read --data (default locomo)")
    parser.add_argument("--data", required=True, help="as for `rmm bench retrieval`")
    parser.add_argument("--convs", default=None, help="conversation positions, e.g. 0-4")
    parser.add_argument("--json", dest="json_out", default=None, help="write the endings here")


def run(args: argparse.Namespace) -> int:
    convs = load_args(args.dataset, args.data, parse_range(args.convs) if args.convs else None)
    if convs is None:
        return 2
    found = endings(convs)
    print(report(found))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(found, indent=2, ensure_ascii=False))
    return 0


def endings(convs: list[Conversation]) -> dict[str, Any]:
    """Per conversation: how many memories, and each ending (old and new memory's text, refs,
    whether in part); and the most one memory ended."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder, ReflectiveMemory.open(
            str(Path(folder) / "endings.sqlite"), embedder=default_embedder(),
            progress=False) as mem:
        for conv in convs:
            ingest(mem, conv)
            memories = {m.id: m for m in mem.memories(user_id=conv.sample_id)}
            ended = [m for m in memories.values() if m.superseded_by in memories]
            by = Counter(m.superseded_by for m in ended)
            out[conv.sample_id] = {
                "memories": len(memories), "endings": len(ended),
                "most_by_one": max(by.values(), default=0),
                "list": [{"old": m.text, "old_refs": m.refs, "part": m.changed_part,
                          "new": memories[m.superseded_by].text,
                          "new_refs": memories[m.superseded_by].refs} for m in ended]}
    return out


def report(found: dict[str, Any]) -> str:
    """Each conversation's counts, then its endings, old memory above the one that ended it."""
    def short(text: str) -> str:
        flat = " | ".join(line.strip() for line in text.splitlines() if line.strip())
        return flat if len(flat) <= QUOTE else flat[:QUOTE] + " ..."

    lines = []
    for conv, row in found.items():
        lines.append(f"{conv}: {row['memories']} memories, {row['endings']} ended on write, "
                     f"at most {row['most_by_one']} by one memory")
        for n, end in enumerate(row["list"], 1):
            part = f" (in part: {short(end['part'])})" if end["part"] else ""
            lines += [f"  {n}. ended: {short(end['old'])}{part}",
                      f"     by:    {short(end['new'])}"]
    total = sum(r["endings"] for r in found.values())
    lines.append(f"{total} endings in {len(found)} conversations")
    return "\n".join(lines)
