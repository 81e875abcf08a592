"""The inspector's pages through Starlette's TestClient on a real SQLite store: every page,
escaping of hostile texts, one user's page never showing another's memories, writes refused
in read-only mode, the form token and confirmations, the access token and the bind guard."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the ui extra is not installed (pip install -e '.[ui]')")
pytest.importorskip("httpx", reason="TestClient needs httpx (the test extra)")

from starlette.testclient import TestClient  # noqa: E402

from rmm_core import ReflectiveMemory  # noqa: E402
from rmm_core.cli import main  # noqa: E402
from rmm_core.errors import MissingDependencyError  # noqa: E402
from rmm_core.ops.sessions_file import read_sessions, sample_path  # noqa: E402
from rmm_core.ui import command  # noqa: E402
from rmm_core.ui.app import build_app  # noqa: E402

SCRIPT = "<script>alert('x')</script> I keep bees"
IMG = '"><img src=x onerror=alert(1)> I grow tomatoes'
EVIL_USER = '<b onmouseover="x">eve</b>'
BASE = "http://127.0.0.1"


@pytest.fixture(scope="module")
def db(tmp_path_factory, embedder):
    path = str(tmp_path_factory.mktemp("ui") / "m.sqlite")
    with ReflectiveMemory.open(path, embedder=embedder) as mem:
        mem.add_sessions(read_sessions(sample_path()), user_id="maya", progress=False)
        mem.append([{"speaker": "Maya", "text": "I just bought a red kayak for the lake."}],
                   user_id="maya", session_id="still-open")
        mem.add(SCRIPT, user_id=EVIL_USER)
        mem.add(IMG, user_id=EVIL_USER, agent_id="garden-bot")
        for n in range(60):
            mem.add(f"Note number {n} about the allotment.", user_id="many",
                    metadata={"batch": "even" if n % 2 == 0 else "odd"},
                    occurred_at=f"2024-{1 + n % 12:02d}-10")
    return path


@pytest.fixture
def memory(db, embedder):
    mem = ReflectiveMemory.open(db, embedder=embedder, recover=False)
    yield mem
    mem.close()


def client(memory, **options) -> TestClient:
    return TestClient(build_app(memory, **options), base_url=BASE)


def ids_on(html: str) -> set[str]:
    return set(re.findall(r"id=([0-9a-f]{32})", html))


def form_token(html: str) -> str:
    return re.search(r'name="form_token" value="([^"]+)"', html).group(1)


def test_users_page_counts_and_finds(memory):
    c = client(memory)
    page = c.get("/").text
    row = re.search(r">maya</a></td>\s*<td class=\"num\">(\d+)</td><td class=\"num\">(\d+)</td>"
                    r"<td class=\"num\">(\d+)</td>", page)
    assert row is not None
    assert int(row.group(1)) == len(memory.memories(user_id="maya"))
    assert int(row.group(2)) == 1  # the session still open
    found = c.get("/", params={"q": "MAN"}).text
    assert ">many</a>" in found
    assert ">maya</a>" not in found


def test_memory_list_is_paginated_and_filtered(memory):
    c = client(memory)
    first = c.get("/user", params={"u": "many"}).text
    assert first.count('class="memory"') == 50
    assert "page 1 of 2" in first
    second = c.get("/user", params={"u": "many", "page": 2}).text
    assert second.count('class="memory"') == 10
    assert not ids_on(first) & ids_on(second)
    odd = c.get("/user", params={"u": "many", "key": "batch", "value": "odd"}).text
    assert odd.count('class="memory"') == 30
    assert "page 1 of 1" in odd
    spring = c.get("/user", params={"u": "many", "since": "2024-03-01",
                                    "until": "2024-04-30"}).text
    assert spring.count('class="memory"') == 10  # March and April of 60 monthly notes
    agent = c.get("/user", params={"u": EVIL_USER, "agent_id": "garden-bot"}).text
    assert agent.count('class="memory"') == 1
    assert "tomatoes" in agent
    assert "<svg" in first  # memories over time
    bad = c.get("/user", params={"u": "many", "since": "last tuesday"})
    assert bad.status_code == 400
    assert "ISO 8601" in bad.text


def test_memory_page_shows_provenance_and_versions(memory):
    c = client(memory)
    m = next(m for m in memory.memories(user_id="maya") if m.refs)
    page = c.get("/memory", params={"u": "maya", "id": m.id}).text
    turns = memory.turns(user_id="maya", session_id=m.session_ids[0])
    assert page.count('class="turn ref"') == len(m.refs)
    assert page.count('class="turn') == len(turns)  # the whole session, sources marked
    assert page.count('class="version"') == len(m.versions) >= 1


def test_supersession_chain_and_badge(memory):
    c = client(memory)
    old = memory.add("I live in Lisbon.", user_id="movers", occurred_at="2023-01-01")[0]
    new = memory.add("I moved to Porto, I live in Porto now.", user_id="movers",
                     occurred_at="2024-01-01")[0]
    if memory.get(old.id, user_id="movers").superseded_by != new.id:
        pytest.skip("supersession did not link these two facts")
    listing = c.get("/user", params={"u": "movers"}).text
    assert 'class="badge superseded">superseded' in listing
    page = c.get("/memory", params={"u": "movers", "id": old.id}).text
    assert new.id in page
    assert "Porto" in page


def test_hostile_texts_are_shown_as_text(memory):
    c = client(memory)
    pages = [c.get("/").text, c.get("/user", params={"u": EVIL_USER}).text,
             c.get("/search", params={"u": EVIL_USER, "q": "bees tomatoes"}).text]
    for m in memory.memories(user_id=EVIL_USER):
        pages.append(c.get("/memory", params={"u": EVIL_USER, "id": m.id}).text)
    for page in pages:
        assert "<script>" not in page
        assert "<img" not in page
        assert "<b onmouseover" not in page
    assert "&lt;script&gt;alert(" in pages[1]
    assert "&#34;&gt;&lt;img src=x onerror" in pages[1]
    assert "&lt;b onmouseover=" in pages[0]
    assert "script-src" not in c.get("/").headers["content-security-policy"]  # none runs


def test_one_users_pages_never_show_anothers_memories(memory):
    c = client(memory)
    maya = {m.id for m in memory.memories(user_id="maya")}
    eve_pages = c.get("/user", params={"u": EVIL_USER}).text + \
        c.get("/search", params={"u": EVIL_USER, "q": "where does Maya live?"}).text
    assert not ids_on(eve_pages) & maya
    stolen = c.get("/memory", params={"u": EVIL_USER, "id": next(iter(maya))})
    assert stolen.status_code == 404
    assert c.get("/user", params={"u": "nobody"}).status_code == 404


def test_search_page_explains(memory):
    c = client(memory)
    page = c.get("/search", params={"u": "maya", "q": "what boat did I buy?",
                                    "budget": 20}).text
    assert "provisional</span>" in page  # the open session's turn
    assert "20 words of context hold the first" in page
    assert 'class="hit returned cut"' in page or "hold the first 1 of 1" in page
    assert page.count('class="hit returned') == 5
    assert "score breakdown of the hits" in page
    assert c.get("/search", params={"u": "maya", "q": "x", "k": 0}).status_code == 400


def test_read_only_refuses_every_write(memory):
    c = client(memory)
    m = memory.memories(user_id="maya")[0]
    page = c.get("/search", params={"u": "maya", "q": "where do I live?"}).text
    assert 'action="/feedback"' not in page
    for path, data in (("/feedback", {"u": "maya", "result": "x"}),
                       ("/update", {"u": "maya", "id": m.id, "text": "hacked", "confirm": "yes"}),
                       ("/delete", {"u": "maya", "id": m.id, "confirm": "yes"})):
        response = c.post(path, data=data)
        assert response.status_code == 403
        assert "read-only" in response.text
    assert memory.get(m.id, user_id="maya").text == m.text


def test_write_mode_feedback_update_delete(memory):
    c = client(memory, write=True)
    before = c.get("/learning", params={"u": "maya"}).text
    examples = int(re.search(r'id="examples">(\d+)', before).group(1))
    page = c.get("/search", params={"u": "maya", "q": "where do I live?"}).text
    result = re.search(r'name="result" value="([^"]+)"', page).group(1)
    cited = re.findall(r'name="cited" value="([^"]+)"', page)
    forged = c.post("/feedback", data={"form_token": "guess", "u": "maya", "result": result})
    assert forged.status_code == 403
    after = c.post("/feedback", data={"form_token": form_token(page), "u": "maya",
                                      "result": result, "cited": cited[:1]})
    assert int(re.search(r'id="examples">(\d+)', after.text).group(1)) == examples + 1
    again = c.post("/feedback", data={"form_token": form_token(page), "u": "maya",
                                      "result": result, "cited": cited[:1]})
    assert again.status_code == 403  # a result takes feedback once

    m = memory.add("My bike is green.", user_id="maya")[0]
    token = form_token(c.get("/memory", params={"u": "maya", "id": m.id}).text)
    unconfirmed = c.post("/update", data={"form_token": token, "u": "maya", "id": m.id,
                                          "text": "My bike is blue."})
    assert unconfirmed.status_code == 403
    c.post("/update", data={"form_token": token, "u": "maya", "id": m.id,
                            "text": "My bike is blue.", "confirm": "yes"})
    assert [v.reason for v in memory.history(m.id, user_id="maya")][-1] == "update"
    assert c.post("/delete", data={"form_token": token, "u": EVIL_USER, "id": m.id,
                                   "confirm": "yes"}).status_code == 404  # not eve's
    c.post("/delete", data={"form_token": token, "u": "maya", "id": m.id, "confirm": "yes"})
    assert m.id not in {x.id for x in memory.memories(user_id="maya")}


def test_learning_page_plots_weights(memory):
    page = client(memory).get("/learning", params={"u": "maya"}).text
    assert page.count("<svg") == 2
    assert 'data-feature="when_date"' in page


def test_token_is_required_when_set(memory):
    c = client(memory, token="s3cret")
    assert c.get("/").status_code == 401
    assert c.get("/", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    entered = c.get("/", params={"token": "s3cret"}, follow_redirects=False)
    assert entered.status_code == 303
    assert "token" not in entered.headers["location"]
    assert c.get("/").status_code == 200  # the cookie it set
    assert client(memory, token="s3cret").get("/", params={"token": "nope"}).status_code == 401


def test_foreign_host_header_is_refused(memory):
    c = client(memory)
    assert c.get("/", headers={"host": "attacker.example"}).status_code == 400


def test_non_loopback_bind_needs_a_token(db, capsys):
    assert main(["ui", db, "--host", "0.0.0.0"]) == 2
    assert "needs --token" in capsys.readouterr().err


def test_missing_extra_names_the_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "uvicorn", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "reflective-memory\[ui\]"'):
        command.load_stack()


def test_breakdown_bars_add_up_to_the_reranker_scores(memory):
    from rmm_core.ui.views import breakdown

    e = memory.search("where do I live?", user_id="maya", k=5, explain=True).explanation
    bars, centring = breakdown(e.rows)
    assert [label for label, _ in bars] == [f"#{n + 1}" for n in range(len(e.hits))]
    for (_, parts), row in zip(bars, e.hits):
        assert sum(parts.values()) + centring == pytest.approx(row.rerank_score, abs=1e-3)


def test_host_names_with_ports():
    from rmm_core.ui.guard import host_name

    assert [host_name(h) for h in ("127.0.0.1:8766", "[::1]:8766", "[::1]", "localhost",
                                   "attacker.example:80")] == \
        ["127.0.0.1", "[::1]", "[::1]", "localhost", "attacker.example"]


def test_search_page_names_the_read_steps_that_moved_a_hit(memory):
    page = client(memory).get("/search", params={
        "u": "many", "q": "Which note about the allotment did I write in March 2024?",
        "k": 20}).text
    assert 'class="muted moved">moved: names a time' in page
