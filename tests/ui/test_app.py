"""The inspector's pages through Starlette's TestClient on a real SQLite store: every page,
escaping of hostile texts, one user's page never showing another's memories, writes refused
in read-only mode, the form token and confirmations, the access token and the bind guard;
and the attacks on them (DNS rebinding, malformed Host, cross-origin writes) refused."""

from __future__ import annotations

import argparse
import http.client
import os
import re
import socket
import subprocess
import sys
import time
from urllib.parse import urlencode

import pytest

pytest.importorskip("starlette", reason="the ui extra is not installed (pip install -e '.[ui]')")
pytest.importorskip("httpx", reason="TestClient needs httpx (the test extra)")

from starlette.testclient import TestClient  # noqa: E402

from rmm_core import ReflectiveMemory  # noqa: E402
from rmm_core.cli import main  # noqa: E402
from rmm_core.errors import InvalidInputError, MissingDependencyError  # noqa: E402
from rmm_core.hosts import bind_name, parse_host, served_hosts  # noqa: E402
from rmm_core.ops.sessions_file import read_sessions, sample_path  # noqa: E402
from rmm_core.ui import command  # noqa: E402
from rmm_core.ui.app import build_app  # noqa: E402

SCRIPT = "<script>alert('x')</script> I keep bees"
IMG = '"><img src=x onerror=alert(1)> I grow tomatoes'
EVIL_USER = '<b onmouseover="x">eve</b>'
BASE = "http://127.0.0.1"
MALFORMED_HOSTS = ("127.0.0.1:18766@evil", "[::1]x", "[::1]:18766x", "::1", "user@127.0.0.1",
                   "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:+80",
                   "127.0.0.1:80:80", "127.1", "127.0.0.1.", "evil.example/x", "", " ",
                   "[fe80::1%25eth0]", "[::1")


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


def test_search_table_numbers_from_one_and_shows_the_apis_scores(memory):
    """The reported case: the table's places started at 2 and its one number column was the
    relevance, not the score `search` returns (asked here of a question whose hits a read
    step moves: the move at Berlin's successor is printed from 1 too)."""
    query = "Where does Maya live?"
    page = client(memory).get("/search", params={"u": "maya", "q": query, "k": 5}).text
    hits = memory.search(query, user_id="maya", k=5).hits
    rows = re.findall(r'<tr class="hit returned[^"]*">\s*<td class="num">(\d+)</td>\s*'
                      r'<td class="num">(\d+|—)</td>\s*<td class="num">(\d+|link)</td>'
                      r'.*?<td class="num score">([\d.]+)</td>', page, re.S)
    assert [int(r[0]) for r in rows] == [1, 2, 3, 4, 5]
    assert [float(r[3]) for r in rows] == [round(h.score, 3) for h in hits]
    assert sorted(int(r[1]) for r in rows if r[1] != "—")[0] == 1  # the reranker's first
    assert min(int(r[2]) for r in rows if r[2] != "link") == 1  # retrieval's first
    assert f"score: {hits[0].score:.3f} = match" in page
    assert re.search(r"moved: [a-z ]+ \d+→\d+", page)  # places from 1, as --explain
    two = sum(len(h.text.split()) for h in hits[:2])  # the line falls above the third hit
    page = client(memory).get("/search", params={"u": "maya", "q": query, "budget": two}).text
    assert "hold the first 2 of 5 hits" in page
    assert re.findall(r'<tr class="hit returned cut">\s*<td class="num">(\d+)<', page) == ["3"]


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


def test_learning_page_tells_packaged_training_from_this_stores_feedback(tmp_path, embedder):
    """A store that never got feedback showed "Trained on 4910 feedback examples": the
    packaged weights' training, unlabelled as such."""
    from rmm_core.learn.rerank import shipped_weights

    with ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder) as mem:
        mem.add("I keep bees.", user_id="new")
        page = client(mem).get("/learning", params={"u": "new"}).text
    shipped = shipped_weights().steps
    assert shipped > 0
    assert re.search(r"Started from the packaged weights, trained on "
                     rf'<strong id="start-examples">{shipped}</strong> examples', page)
    assert "this store's own feedback has trained them on <strong id=\"examples\">0<" in page


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


def test_host_headers_are_parsed_strictly():
    assert [parse_host(h) for h in ("127.0.0.1:8766", "[::1]:8766", "[0:0:0:0:0:0:0:1]",
                                    "LocalHost", "attacker.example:80")] == \
        [("127.0.0.1", 8766), ("[::1]", 8766), ("[::1]", None), ("localhost", None),
         ("attacker.example", 80)]
    for bad in MALFORMED_HOSTS:
        assert parse_host(bad) is None, bad


def test_any_loopback_bind_serves_only_its_own_address_and_port():
    assert served_hosts("127.0.0.2", 18767) == (
        "127.0.0.2:18767", "127.0.0.1:18767", "localhost:18767", "[::1]:18767")
    assert served_hosts("0:0:0:0:0:0:0:1", 18767) == (
        "[::1]:18767", "127.0.0.1:18767", "localhost:18767")
    assert served_hosts("127.0.0.1", 0) == ("127.0.0.1", "localhost", "[::1]")
    assert served_hosts("0.0.0.0", 18767) == ("*",)  # not loopback: the token guards it
    with pytest.raises(InvalidInputError, match="not a host name"):
        build_app(None, hosts=("127.0.0.1:18766@evil",))


def test_malformed_host_header_is_refused_userinfo_and_trailing_junk(memory):
    """`Host: 127.0.0.1:18766@evil` and `[::1]x` were read as 127.0.0.1 and [::1]."""
    for bad in MALFORMED_HOSTS:
        assert client(memory).get("/", headers={"host": bad}).status_code == 400, bad
    c = client(memory, hosts=served_hosts("127.0.0.1", 18766))
    assert c.get("/", headers={"host": "127.0.0.1:18766"}).status_code == 200
    assert c.get("/", headers={"host": "[::1]:18766"}).status_code == 200
    for bad in ("127.0.0.1:18767", "127.0.0.1"):  # another port, or 80
        assert c.get("/", headers={"host": bad}).status_code == 400, bad


def serve_ui(db: str, host: str, *args: str) -> tuple[subprocess.Popen, int]:
    """`rmm ui DB --host HOST` in a subprocess, once its port answers."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        port = s.getsockname()[1]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RMM_PROGRESS": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "rmm_core.cli", "ui", db, "--host", host,
                             "--port", str(port), *args], env=env, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"rmm ui did not start: {proc.communicate()[1]}") from None
            time.sleep(0.2)


def fetch(host: str, port: int, path: str, host_header: str, method: str = "GET",
          form: dict | None = None) -> tuple[int, str]:
    """One real HTTP request to `host`:`port` naming `host_header` as its Host."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    body = urlencode(form or {})
    headers = {"Host": host_header, "Content-Type": "application/x-www-form-urlencoded"}
    try:
        conn.request(method, path, body=body if form else None, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


@pytest.mark.parametrize("bind", ["127.0.0.2", "0:0:0:0:0:0:0:1"])
def test_dns_rebinding_via_another_loopback_address_is_refused(tmp_path, embedder, bind):
    """DNS rebinding via 127.0.0.2 (or ::1 spelt out): `rmm ui --host 127.0.0.2 --write`
    took any Host, so a page on evil.example read every memory and deleted one."""
    db = str(tmp_path / "m.sqlite")
    with ReflectiveMemory.open(db, embedder=embedder) as mem:
        m = mem.add("My bank PIN is 4411.", user_id="victim")[0]
    proc, port = serve_ui(db, bind, "--write")
    address, own = bind_name(bind), f"{bind_name(bind)}:{port}"
    try:
        evil = f"evil.example:{port}"
        page = f"/memory?u=victim&id={m.id}"
        assert fetch(address.strip("[]"), port, "/", evil) == \
            (400, "this host name is not served here")
        status, html = fetch(address.strip("[]"), port, page, own)
        assert status == 200
        assert "4411" in html
        for name in (evil, f"localhost:{port + 1}"):
            status, text = fetch(address.strip("[]"), port, page, name)
            assert (status, "4411" in text) == (400, False), name
            status, _ = fetch(address.strip("[]"), port, "/delete", name, "POST", {
                "form_token": form_token(html), "u": "victim", "id": m.id, "confirm": "yes"})
            assert status == 400, name
        assert fetch(address.strip("[]"), port, "/", f"localhost:{port}")[0] == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    with ReflectiveMemory.open(db, embedder=embedder) as mem:
        assert mem.get(m.id, user_id="victim").text == m.text


def test_cross_origin_write_is_refused_even_with_the_form_token(memory):
    """CSRF by Origin: a write posted from another site (or a sandboxed page, `Origin: null`)
    is refused even when it carries a valid form token."""
    c = client(memory, write=True)
    m = memory.add("My locker code is 2718.", user_id="maya")[0]
    token = form_token(c.get("/memory", params={"u": "maya", "id": m.id}).text)
    form = {"form_token": token, "u": "maya", "id": m.id, "confirm": "yes"}
    for origin in ("http://evil.example", "null", "http://127.0.0.1:8766",
                   "https://127.0.0.1", "http://127.0.0.1@evil.example"):
        response = c.post("/delete", data=form, headers={"origin": origin})
        assert response.status_code == 403, origin
        assert "from this page itself" in response.text
    assert memory.get(m.id, user_id="maya").text == m.text
    same = c.post("/delete", data=form, headers={"origin": BASE}, follow_redirects=False)
    assert same.status_code == 303
    assert m.id not in {x.id for x in memory.memories(user_id="maya")}


def test_token_without_the_bearer_scheme_is_refused(memory):
    """`Authorization: <token>` without "Bearer" was accepted as the token."""
    c = client(memory, token="s3cret")
    for header in ("s3cret", "Basic s3cret", "Bearers3cret", "Bearer", "Bearer s3cret x"):
        assert c.get("/", headers={"Authorization": header}).status_code == 401, header
    assert c.get("/", headers={"Authorization": "bearer s3cret"}).status_code == 200


def test_token_file_is_read_and_its_problems_named(tmp_path, db, capsys):
    """`rmm ui --token-file` keeps the token out of `ps`; a bad file is a clear error."""
    good = tmp_path / "token"
    good.write_text("\n  s3cret-from-file \n")
    assert command.read_token(good) == "s3cret-from-file"
    (tmp_path / "empty").write_text(" \n")
    (tmp_path / "two").write_text("a\nb\n")
    for path, message in ((tmp_path / "missing", "cannot read token file"),
                          (tmp_path, "cannot read token file"),
                          (tmp_path / "empty", "is empty"), (tmp_path / "two", "one token")):
        with pytest.raises(InvalidInputError, match=message):
            command.read_token(path)
        assert main(["ui", db, "--token-file", str(path)]) == 2
        assert message in capsys.readouterr().err
    assert main(["ui", db, "--token", "x", "--token-file", str(good)]) == 2
    assert "not both" in capsys.readouterr().err
    args = argparse.Namespace(token=None, token_file=str(good))
    assert command.token_of(args) == "s3cret-from-file"
    command.check_bind("0.0.0.0", command.token_of(args))  # a token from a file counts


def test_a_token_read_from_a_file_is_not_printed(tmp_path, db, capsys, monkeypatch):
    """The link `rmm ui` prints names the file, not the token it keeps out of `ps`; a token
    given on the command line is printed in the link as before. The server is a stub that
    returns at once (this tests what is printed, not serving)."""
    served = []
    stub = argparse.Namespace(run=lambda app, **kw: served.append(kw))
    monkeypatch.setattr(command, "load_stack", lambda: (None, stub, None))
    secret = tmp_path / "token"
    secret.write_text("s3cret-from-file\n")
    assert main(["ui", db, "--token-file", str(secret), "--port", "18799"]) == 0
    err = capsys.readouterr().err
    assert "s3cret-from-file" not in err
    assert f"?token=<the token in {secret}>" in err
    assert main(["ui", db, "--token", "typed", "--port", "18799"]) == 0
    assert "?token=typed" in capsys.readouterr().err
    assert [kw["port"] for kw in served] == [18799, 18799]


def test_search_page_names_the_read_steps_that_moved_a_hit(memory):
    page = client(memory).get("/search", params={
        "u": "many", "q": "Which note about the allotment did I write in March 2024?",
        "k": 20}).text
    assert 'class="muted moved">moved: names a time' in page
