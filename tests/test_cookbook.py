"""Every cookbook script runs offline as shipped (a real subprocess, the real embedder) and
shows what its docstring promises: each check below reads the script's printed output. The
LangChain one has its own test in tests/langchain."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

COOKBOOK = Path(__file__).resolve().parents[1] / "cookbook"


def run(script: str, *args: str, cwd: Path) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, str(COOKBOOK / script), *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def section(out: str, start: str, end: str | None = None) -> str:
    """The printed text from the line holding `start` up to the one holding `end`."""
    assert start in out, f"{start!r} not printed"
    text = out.split(start, 1)[1]
    return text.split(end, 1)[0] if end else text


def check_quickstart(out: str) -> None:
    """Ingests a multi-session conversation, then answers recall queries from memory,
    showing each hit's source turns and whether they hold the question's gold turns."""
    assert re.search(r"\d+ turns -> \d+ memories in", out)
    questions = out.split("Q: ")[1:]
    assert len(questions) == 2
    for answer in questions:
        assert re.search(r"\[\d\.\d\d\] from turns \S", answer)  # each query has hits
    assert gold_found(out) == 2


def gold_found(out: str) -> int:
    """How many questions the quickstart says its hits found the gold turns of, each
    verdict checked against the gold turns and hits it printed, and against its total."""
    questions = out.split("Q: ")[1:]
    found = 0
    for answer in questions:
        gold = re.search(r"\(gold turns: ([^)]*)\)", answer)[1].split(", ")
        hits = [line.split(", ") for line in re.findall(r"\] from turns (.*)", answer)]
        verdict = re.search(r"^  -> (found|missed): (.*)$", answer, re.M)
        first = {t: n for n, refs in reversed(list(enumerate(hits, 1))) for t in refs}
        if all(g in first for g in gold):
            found += 1
            assert verdict[1] == "found"
            assert verdict[2] == ", ".join(f"{g} in hit {first[g]}" for g in gold)
        else:
            assert verdict[1] == "missed"
            assert all(g in verdict[2] for g in gold if g not in first)
    total = re.search(r"Gold turns found for (\d+) of (\d+) questions in the top 2 hits", out)
    assert (int(total[1]), int(total[2])) == (found, len(questions))
    return found


def check_scm_controller(out: str) -> None:
    """Which inputs the gate lets through, and what the builder puts in (raw turns or a
    summary) and why, within the budget, the previous turn always kept."""
    assert "SKIP   'thanks!': small talk" in out
    assert re.search(r"SKIP   'What is the capital of Portugal\?': best memory similarity "
                     r"0\.\d\d < 0\.35", out)
    assert "RECALL 'Do you remember what I told you about the support group?': refers to " \
           "the past or to the user ('remember')" in out
    assert re.search(r"RECALL 'When is Caroline planning to adopt\?': best memory "
                     r"similarity 0\.\d\d >= 0\.35", out)
    assert re.search(r"-> raw +raw turns fit", out)
    for used, budget in re.findall(r"context: (\d+)/(\d+) words", out):
        assert 0 < int(used) <= int(budget) == 90
    context = section(out, "The context put into the prompt for the career question:")
    assert "adopt a child" in context
    assert context.rstrip().endswith("Previous turn:\nMelanie: How have you been lately?")


def check_memgpt_working_context(out: str) -> None:
    """Core blocks edited through tools (bad input is an error string), a pressure notice at
    ~70 %, eviction into a recursive summary at 100 %, evicted messages still searchable."""
    tools = section(out, "-- the agent edits its core memory", "-- a conversation")
    assert "Name: Ada. Lives in Lisbon (moved 2024)." in tools
    assert "Error: no core block 'pets'" in tools
    queue = section(out, "-- a conversation fills the message queue", "-- the working context")
    usage = [float(u) for u in re.findall(r"^ *(\d+\.\d)% used", queue, re.M)]
    pressure = queue.index("[memory pressure]")
    notice_at = usage[len(re.findall(r"% used", queue[:pressure])) - 1]
    assert 70 <= notice_at < 100
    evicted = int(re.search(r">> evicted (\d+) oldest messages into the summary", queue)[1])
    assert evicted > 0
    assert usage[-1] < usage[-2]
    assert usage[-1] <= 50
    context = section(out, "-- the working context as the LLM sees it", "-- evicted")
    assert "Summary of earlier messages" in context
    assert "allergic to cats" in context
    recall = section(out, "-- evicted messages are still in recall storage", "-- archival")
    assert "sister Ines visits on 15 March; she is allergic to cats" in recall
    archival = section(out, "-- archival storage")
    memory_id = re.search(r"Archived as memory (\w+)\.", archival)[1]
    assert f"(memory {memory_id}) archival note: Ada's sister Ines is allergic" in archival


def check_amem_notes(out: str) -> None:
    """Every memory gets keywords, tags and a context line, related memories link, and search
    can follow the links."""
    notes = re.findall(r"keywords=\[(.+)\] tags=\[(.+)\]\n +context='(.+)' links=(\d+)", out)
    assert len(notes) == 3
    assert all(k and t and c and int(n) >= 1 for k, t, c, n in notes)
    plain = section(out, "follow_links=False:", "follow_links=True:")
    linked = section(out, "follow_links=True:")
    assert "Rex the beagle chewed" in plain.splitlines()[1]
    assert "adopted a beagle" not in plain
    assert "adopted a beagle" in linked


def check_agent_workflow_memory(out: str) -> None:
    """Workflows induced from successful runs, deduplicated, retrieved for a new task as a
    system-prompt block."""
    induced = out.split("Workflows that worked")[0]
    assert "(induced from 2 runs)" in induced  # two runs of one routine became one workflow
    assert "search_flights(origin={name_1}, destination={name_2}, date={date_1})" in induced
    assert "Paris" not in induced
    assert "Berlin" not in induced
    block = section(out, "Workflows that worked for similar tasks before")
    assert "Workflow: Book a flight from {name_1} to {name_2} on {date_1}" in block


def check_llamaindex_chat(out: str) -> None:
    """Remembers across sessions: session 2's prompt carries session 1's memory; the memory
    block and the reranker work on the same memory."""
    seen = section(out, "--- what the LLM sees in session 2 ---", "--- memory block ---")
    assert "Long-term memory about this user" in seen
    assert "Lisbon half marathon" in seen
    block = section(out, "--- memory block ---", "--- reranked ---")
    assert "<reflective_memory>" in block
    assert "half marathon" in block
    reranked = section(out, "--- reranked ---").strip().splitlines()
    assert len(reranked) == 2
    assert not any("Sourdough" in line for line in reranked)


def check_mcp_client(out: str) -> None:
    """`rmm mcp` over stdio: its tools listed, a fact and a conversation added, each found by
    the next search (best first), another user's memory refused."""
    assert "tools: add, search, get, update, delete, history, profile\n" in out
    assert re.search(r"from turns mcp-[\w-]+:1, mcp-[\w-]+:2, mcp-[\w-]+:3", out)
    cat = section(out, "Q: What is my cat afraid of?", "Q: ").strip().splitlines()
    race = section(out, "Q: Which race am I training for?", "another user").strip().splitlines()
    assert "vacuum cleaner" in cat[0]
    assert "half marathon" in race[0]
    assert "AccessDenied: this server serves user 'maya' only, not 'someone'" in out


CHECKS = {
    "quickstart.py": check_quickstart,
    "scm_controller.py": check_scm_controller,
    "memgpt_working_context.py": check_memgpt_working_context,
    "amem_notes.py": check_amem_notes,
    "agent_workflow_memory.py": check_agent_workflow_memory,
    "llamaindex_chat.py": check_llamaindex_chat,
    "mcp_client.py": check_mcp_client,
}
NEEDS = {"mcp_client.py": "mcp"}
"""The extra module a script needs (skipped without it)."""


def test_every_script_has_a_check():
    scripts = {p.name for p in COOKBOOK.glob("*.py")} - {"langchain_agent.py"}
    assert scripts == set(CHECKS)


@pytest.mark.parametrize("script", sorted(CHECKS))
def test_cookbook_script_shows_what_it_claims(script, tmp_path):
    if script in NEEDS:
        pytest.importorskip(NEEDS[script])
    args = ["--db", str(tmp_path / "q.sqlite"), "--questions", "2"] \
        if script == "quickstart.py" else []
    CHECKS[script](run(script, *args, cwd=tmp_path))


def test_quickstart_runs_on_the_packaged_sample_by_default(tmp_path):
    out = run("quickstart.py", "--db", str(tmp_path / "q.sqlite"), cwd=tmp_path)
    assert "the sample conversation" in out
    assert "30 turns -> " in out
    pet = out.split("Q: What pet does Maya have?")[1].split("Q: ")[0]
    assert "Pixel" in pet
    assert "  -> found: S2:5 in hit " in pet
    assert gold_found(out) >= 4  # of the sample's 5 questions (a miss is said as one)


def test_quickstart_takes_the_users_own_conversation_file(tmp_path):
    conversation = {"sessions": [
        {"session_id": "a", "turns": [
            {"id": "a:1", "speaker": "Ann", "text": "I keep bees on my roof in Porto."},
            {"id": "a:2", "speaker": "Bob", "text": "Do they make much honey?"}]},
        {"session_id": "b", "turns": [
            {"id": "b:1", "speaker": "Ann", "text": "My daughter starts violin lessons."}]}],
        "questions": [{"question": "Where does Ann keep bees?", "evidence": ["a:1"]},
                      {"question": "Who plays the cello?", "evidence": ["c:1"]}]}
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(conversation))
    out = run("quickstart.py", "--data", str(path), "--db", str(tmp_path / "q.sqlite"),
              cwd=tmp_path)
    assert f"Ingesting {path}, 2 sessions" in out
    assert "3 turns -> " in out
    assert "Q: Where does Ann keep bees?   (gold turns: a:1)" in out
    assert "from turns a:1" in out.split("Q: ")[1]
    assert "  -> found: a:1 in hit 1" in out.split("Q: ")[1]
    assert "  -> missed: no hit holds c:1" in out.split("Q: ")[2]  # a turn it never had
    assert gold_found(out) == 1
