"""A small memory searched through two embedders, for the framework-embedding tests: the
same vectors must give the same hits whichever interface they come through."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rmm_core import ReflectiveMemory
from rmm_core.models.embed_adapters import PROBE_TEXT

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


def assert_ranks_as_native(folder: Path, native: Any, wrap: Callable[[Any], Any]) -> None:
    """`wrap(native)` (the native embedder behind a framework's interface) finds the same
    memories in the same order as `native`, whichever of the two wrote the store."""
    native_db, wrapped_db = folder / "native.sqlite", folder / "wrapped.sqlite"
    build(native_db, native)
    build(wrapped_db, wrap(native))
    reference = rankings(native_db, native)
    assert all(len(hits) == 4 for hits in reference.values())
    # the native store searched through the framework: the same memories, by id, in order
    assert rankings(native_db, wrap(native)) == reference
    # a store written through the framework: the same texts, and its own ids either way
    through_framework = rankings(wrapped_db, wrap(native))
    assert texts(through_framework) == texts(reference)
    assert rankings(wrapped_db, native) == through_framework


def assert_embeds_in_batches(folder: Path, framework: Any, calls: list[Any], name: str) -> Any:
    """A memory over `framework` (which records each call's input in `calls`: a list for a
    batch, a string for one text) probes its dimension once, names it `name` and sends texts
    in batches only, a session's pieces in one call. Returns the memory's embedder, with
    `calls` cleared."""
    with ReflectiveMemory.open(str(folder / "m.sqlite"), embedder=framework) as mem:
        assert calls == [[PROBE_TEXT]]  # it states no dimension: probed once
        assert mem.embedder.dim == 384
        assert mem.embedder.name == name
        mem.add_session(SESSION, user_id="u1", session_id="s1")
        mem.search(QUERIES[0], user_id="u1")
        wrapper = mem.embedder
    assert all(isinstance(call, list) for call in calls)  # never one text at a time
    assert max(len(call) for call in calls[1:]) > 1
    calls.clear()
    return wrapper
