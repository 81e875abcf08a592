"""One `current` on every surface: `hit.current` (the API), the MCP search payload, `rmm
search --json`, the inspector page's rows and both adapters' metadata agree on every hit of
the README's examples and of a sample of the packaged supersession set, and agree with what
the hit's text says (a hit whose text notes a change is not current). Real SQLite files, the
real embedder, the CLI in-process."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from rmm_core import ReflectiveMemory, Turn
from rmm_core.bench.supersede_search import USER, load_cases, sample
from rmm_core.cli import main
from rmm_core.mcp.payload import result_dict
from rmm_core.types import SearchResult, iso

NOTES = ("(changed ", "(partly changed ", "(may have changed ")
"""What a hit's text adds when what it says no longer holds (`read.validity`, `read.versions`)."""


def adapters_current(result: SearchResult) -> Iterator[list[tuple[str, bool]]]:
    """`current` as each installed adapter hands a hit to its framework."""
    try:
        from langchain_rmm.converters import hits_to_documents
    except ImportError:
        pass
    else:
        yield [(d.id, d.metadata["current"]) for d in hits_to_documents(result.hits)]
    try:
        from llamaindex_rmm.converters import hits_to_nodes
    except ImportError:
        pass
    else:
        yield [(n.node.node_id, n.node.metadata["current"]) for n in hits_to_nodes(result.hits)]


def page_current(mem: ReflectiveMemory, query: str, *, user: str, k: int
                 ) -> list[tuple[str, bool]] | None:
    """Each returned hit of the inspector's search page and whether it shows no "not
    current" badge (None: the `ui` extra is not installed)."""
    try:
        from starlette.testclient import TestClient

        from rmm_core.ui.app import build_app
    except ImportError:
        return None
    page = TestClient(build_app(mem), base_url="http://127.0.0.1").get(
        "/search", params={"u": user, "q": query, "k": k}).text
    rows = re.findall(r'<tr class="hit returned[^"]*">(.*?)</tr>', page, re.S)
    return [(re.search(r"id=([0-9a-f]{32})", row)[1], "not current</span>" not in row)
            for row in rows]


def surfaces(capsys, db: str, mem: ReflectiveMemory, query: str, *, user: str, k: int,
             as_of: str | None = None) -> list[bool]:
    """`current` of each hit of one search, checked equal on every surface that can ask it
    (the CLI and the page take no `as_of`); returns the API's."""
    result = mem.search(query, user_id=user, k=k, as_of=as_of)
    api = [(h.memory.id, h.current) for h in result]
    assert all(type(c) is bool for _, c in api)
    payload = result_dict(result)["hits"]
    assert [(d["id"], d["current"]) for d in payload] == api
    assert [d["valid_to"] for d in payload] == [iso(h.memory.valid_to) for h in result]
    for adapter in adapters_current(result):
        assert adapter == api
    assert [(h.memory.id, h.metadata()["current"]) for h in result] == api
    if as_of is None:
        explained = mem.search(query, user_id=user, k=k, explain=True).explanation
        assert [(r.memory_id, r.current) for r in explained.hits] == api
        shown = page_current(mem, query, user=user, k=k)
        assert shown is None or shown == api
        assert main(["--db", db, "search", "--user", user, query, "--k", str(k),
                     "--json"]) == 0
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [(r["id"], r["current"]) for r in rows] == api
        assert [r["valid_to"] for r in rows] == [iso(h.memory.valid_to) for h in result]
    for hit in result:  # the field says what the text says
        if any(note in hit.text for note in NOTES):
            assert hit.current is False, hit.text
        if not hit.current:
            assert any(note in hit.text for note in NOTES) or hit.memory.changed_part, hit.text
    assert [h for h in result if h.current] == [h for h in result if h.current is True]
    return [c for _, c in api]


@pytest.fixture
def opened(tmp_path, embedder):
    made = []

    def open_one() -> tuple[str, ReflectiveMemory]:
        path = str(tmp_path / f"m{len(made)}.sqlite")
        made.append(ReflectiveMemory.open(path, embedder=embedder))
        return path, made[-1]

    yield open_one
    for mem in made:
        mem.close()


def test_the_readme_change_is_not_current_and_was_current_then(opened, capsys):
    """README "What is still true": the rescheduled webinar."""
    db, mem = opened()
    mem.add("Our team webinar is scheduled for March 20.", user_id="u1",
            occurred_at="2024-02-01")
    mem.add("The webinar got rescheduled to March 27.", user_id="u1", occurred_at="2024-02-10")
    assert surfaces(capsys, db, mem, "When is the webinar?", user="u1", k=2) == [True, False]
    # said before the change, it held on 5 February: its hit then is current, unnoted
    assert surfaces(capsys, db, mem, "When is the webinar?", user="u1", k=2,
                    as_of="2024-02-05") == [True]
    hits = mem.search("When is the webinar?", user_id="u1", k=2)
    assert [h.memory.text for h in hits if h.current] == [
        "The webinar got rescheduled to March 27."]


def test_the_move_in_the_changes_page_is_not_current(opened, capsys):
    """docs/changes.md: Lisbon, then Berlin."""
    db, mem = opened()
    mem.add("I live in Lisbon and work as a nurse.", user_id="ana", occurred_at="2024-01-10")
    mem.add("Big news: I moved to Berlin last week, I started a new job as a data analyst.",
            user_id="ana", occurred_at="2024-06-15")
    assert surfaces(capsys, db, mem, "Where do I live?", user="ana", k=2) == [True, False]
    assert surfaces(capsys, db, mem, "Where do I live?", user="ana", k=2,
                    as_of="2024-03-01") == [True]


def test_a_version_read_at_search_time_is_not_current_everywhere(opened, capsys):
    """No rule linked them on write; the search reads the older one as a version."""
    db, mem = opened()
    mem.add("I'm a barista at Blue Bottle downtown.", user_id="ana", occurred_at="2024-01-10")
    mem.add("Three weeks into the bank job, I don't miss the coffee shop rush at all.",
            user_id="ana", occurred_at="2024-06-15")
    assert all(m.current for m in mem.memories(user_id="ana"))
    assert surfaces(capsys, db, mem, "Where do I work?", user="ana", k=2) == [True, False]


def test_the_readme_quickstart_hits_are_current(opened, capsys):
    db, mem = opened()
    mem.add_session([
        Turn("Caroline", "I went to an LGBTQ support group yesterday.", id="D1:3"),
        Turn("Melanie", "That's brave! I painted a sunrise with my kids last week.", id="D1:4"),
    ], user_id="u1", started_at="2023-05-08T13:56")
    mem.add_session([Turn("user", "We adopted a beagle called Biscuit.", id="1"),
                     Turn("user", "I work night shifts at the hospital.", id="2")],
                    user_id="u1")
    for query in ("When did Melanie paint a sunrise?", "What is my dog's name?"):
        assert all(surfaces(capsys, db, mem, query, user="u1", k=3))


def test_every_surface_agrees_on_the_packaged_supersession_cases(tmp_path, embedder, capsys):
    """A stratified sample of `updates_dev.jsonl` (changes and non-changes, six languages),
    added as the through-search bench adds them; the present question and the past one."""
    seen: list[bool] = []
    for case in sample(load_cases(), 24):
        db = str(tmp_path / f"{case.id}.sqlite")
        with ReflectiveMemory.open(db, embedder=embedder) as mem:
            for n, (when, turns) in enumerate(case.sessions, 1):
                mem.add_session(list(turns), user_id=USER, session_id=f"{case.id}-s{n}",
                                started_at=when)
            seen += surfaces(capsys, db, mem, case.question, user=USER, k=5)
            if case.past is not None:
                seen += surfaces(capsys, db, mem, case.past[0], user=USER, k=5,
                                 as_of=case.past[1])
    assert set(seen) == {True, False}  # the sample holds both kinds of hit
