"""`rmm bench extract`: how well prospective reflection captures LoCoMo's per-session facts.

LoCoMo lists, per session and speaker, `observation` facts with the turn each came from.
A fact turn is covered when some memory's refs include it. Also reported: memories and
words per memory (coverage is free for a pipeline that keeps every turn), and LLM calls
and tokens per session. The LLM-free pipeline always runs; an LLM one runs beside it when
`--llm-url` (an OpenAI-compatible server), `--langchain` (a chat model by import path) or
`--local-llm` is given.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from ..memory import ReflectiveMemory
from ..models.embed import default_embedder
from .llm_args import add_llm_arguments, llm_from_args
from .locomo import Conversation, load_locomo
from .retrieval import parse_range

COLUMNS = ("fact turns covered %", "memories/session", "words/memory", "calls/session",
           "tokens/session", "failures", "s/session")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="path of locomo10.json (or the dev file)")
    parser.add_argument("--convs", default="0", help="conversations to use, e.g. 0-4 or 0,2")
    parser.add_argument("--sessions", type=int, default=None,
                        help="first N sessions of each conversation (LLM runs are slow)")
    add_llm_arguments(parser, max_tokens=768)
    parser.add_argument("--json", dest="json_out", default=None, help="write figures here")


def run(args: argparse.Namespace) -> int:
    convs = load_locomo(args.data, parse_range(args.convs))
    if args.sessions:
        convs = [Conversation(c.sample_id, c.speakers, c.sessions[: args.sessions],
                              c.questions, c.observations) for c in convs]
    rows = {"llm-free": evaluate(convs, None)}
    llm = llm_from_args(args)
    if llm is not None:
        rows["llm"] = evaluate(convs, llm)
    n_sessions = sum(len(c.sessions) for c in convs)
    print(f"LoCoMo extraction: {len(convs)} conversations, {n_sessions} sessions")
    print(format_table(rows))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2))
    return 0


def evaluate(convs: list[Conversation], llm: Any) -> dict[str, float]:
    """Ingest every session through the public API and score its memories' refs."""
    covered = gold = memories = words = sessions = 0
    seconds = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        mem = ReflectiveMemory.open(str(Path(tmp) / "bench.sqlite"), llm=llm,
                                    embedder=default_embedder(), progress=False)
        for conv in convs:
            for session in conv.sessions:
                start = time.perf_counter()
                mem.add_session(session.turns, user_id=conv.sample_id,
                                session_id=session.session_id, started_at=session.started_at)
                seconds += time.perf_counter() - start
            bank = mem.memories(user_id=conv.sample_id)
            referenced = {r for m in bank for r in m.refs}
            for session in conv.sessions:
                facts = {turn for _, _, turn in conv.observations.get(session.session_id, [])}
                gold += len(facts)
                covered += len(facts & referenced)
            memories += len(bank)
            words += sum(len(m.text.split()) for m in bank)
            sessions += len(conv.sessions)
        usage = mem.usage()
        mem.close()
    return {"fact turns covered %": 100 * covered / max(gold, 1),
            "memories/session": memories / max(sessions, 1),
            "words/memory": words / max(memories, 1),
            "calls/session": usage["calls"] / max(sessions, 1),
            "tokens/session": (usage["prompt_tokens"] + usage["completion_tokens"])
            / max(sessions, 1),
            "failures": usage["failures"],
            "s/session": seconds / max(sessions, 1)}


def format_table(rows: dict[str, dict[str, float]]) -> str:
    head = f"{'pipeline':<10}" + "".join(f"{c:>22}" for c in COLUMNS)
    lines = [head, "-" * len(head)]
    for name, row in rows.items():
        lines.append(f"{name:<10}" + "".join(f"{row[c]:>22.1f}" for c in COLUMNS))
    return "\n".join(lines)
