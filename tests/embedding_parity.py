"""A small memory searched through two embedders, for the framework-embedding tests: the
same vectors must give the same hits whichever interface they come through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmm_core import ReflectiveMemory

FACTS = [
    "My sister Alma breeds greyhounds on a farm near Lisbon.",
    "I repair vintage motorbikes in my garage every weekend.",
    "Our daughter starts primary school in Ghent this September.",
    "I am allergic to peanuts and carry an epinephrine pen.",
    "The book club meets on the first Thursday of each month.",
]
SESSION = [
    ("user", "We finally adopted a rescue cat last week, a grey tabby called Miso."),
    ("assistant", "Congratulations! How is Miso settling in?"),
    ("user", "She hides under the sofa, but she loves the balcony in the morning sun."),
    ("assistant", "Give her time; a quiet room of her own helps."),
    ("user", "I also switched jobs: I now teach chemistry at a secondary school."),
]
QUERIES = ["What pet did I adopt?", "Where does my sister live?", "What do I do at weekends?",
           "What is my job?", "Which food must I avoid?", "When does the club meet?"]


def build(path: Path, embedder: Any) -> None:
    """Write the facts (embedded one call each) and a session (reflected in one batch)."""
    with ReflectiveMemory.open(str(path), embedder=embedder) as mem:
        for fact in FACTS:
            mem.add(fact, user_id="u1")
        mem.add_session(SESSION, user_id="u1", session_id="s1")


def rankings(path: Path, embedder: Any, k: int = 4) -> dict[str, list[tuple[str, str]]]:
    """Each query's hits as (memory id, text), best first."""
    with ReflectiveMemory.open(str(path), embedder=embedder) as mem:
        return {q: [(h.memory.id, h.memory.text) for h in mem.search(q, user_id="u1", k=k)]
                for q in QUERIES}


def texts(ranked: dict[str, list[tuple[str, str]]]) -> dict[str, list[str]]:
    return {q: [text for _, text in hits] for q, hits in ranked.items()}
