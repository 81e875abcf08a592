"""Every page of the inspector on each storage backend (SQLite, PostgreSQL): it reads only
through the Store API, so the same pages come back from both."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the ui extra is not installed (pip install -e '.[ui]')")
pytest.importorskip("httpx", reason="TestClient needs httpx (the test extra)")

from starlette.testclient import TestClient  # noqa: E402

from rmm_core.ops.sessions_file import read_sessions, sample_path  # noqa: E402
from rmm_core.ui.app import build_app  # noqa: E402

pytestmark = pytest.mark.backends


def test_every_page_on_each_backend(open_memory):
    mem = open_memory()
    mem.add_sessions(read_sessions(sample_path()), user_id="maya", progress=False)
    c = TestClient(build_app(mem, write=True), base_url="http://127.0.0.1")
    assert ">maya</a>" in c.get("/").text
    listing = c.get("/user", params={"u": "maya"}).text
    assert listing.count('class="memory"') == len(mem.memories(user_id="maya"))
    memory_id = re.search(r"id=([0-9a-f]{32})", listing).group(1)
    detail = c.get("/memory", params={"u": "maya", "id": memory_id})
    assert detail.status_code == 200
    assert 'class="turn ref"' in detail.text
    page = c.get("/search", params={"u": "maya", "q": "where do I live?"}).text
    assert page.count('class="hit returned') == 5
    token = re.search(r'name="form_token" value="([^"]+)"', page).group(1)
    result = re.search(r'name="result" value="([^"]+)"', page).group(1)
    cited = re.findall(r'name="cited" value="([^"]+)"', page)[:1]
    before = int(re.search(r'id="examples">(\d+)', c.get(
        "/learning", params={"u": "maya"}).text).group(1))
    after = c.post("/feedback", data={"form_token": token, "u": "maya", "result": result,
                                      "cited": cited}).text
    assert int(re.search(r'id="examples">(\d+)', after).group(1)) == before + 1


def test_explained_search_inside_the_database(open_memory, store_target):
    """Searched inside PostgreSQL (no in-process index): the cosines and the fused score are
    shown but not split into parts; the reranker's score still is."""
    if "://" not in store_target:
        pytest.skip("search.backend='database' is PostgreSQL's")
    mem = open_memory(search={"backend": "database"})
    mem.add_sessions(read_sessions(sample_path()), user_id="maya", progress=False)
    e = mem.search("where do I live?", user_id="maya", k=3, explain=True).explanation
    assert len(e.hits) == 3
    assert all(r.retrieval == {} for r in e.rows)
    for row in e.rows:
        assert sum(row.rerank.values()) == pytest.approx(row.rerank_score, abs=1e-4)
    c = TestClient(build_app(mem), base_url="http://127.0.0.1")
    page = c.get("/search", params={"u": "maya", "q": "where do I live?"}).text
    assert "retrieval (z)" in page
