"""One ranked list on development questions: `search(k=a)` is the head of
`search(k=b)`, a word budget and `min_score` cut the same list, and scores never rise down
it; for the default settings and each read option. Real SQLite files, the packaged
embedder, LoCoMo and BEAM development conversations (skipped where ../shared is absent).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rmm_core import ReflectiveMemory
from rmm_core.bench.beam import load_beam
from rmm_core.bench.locomo import load_locomo
from rmm_core.bench.records import ingest
from rmm_core.text import count_words

SHARED = Path(__file__).resolve().parents[2].parent / "shared"

pytestmark = pytest.mark.slow

DATA = {"locomo": (load_locomo, SHARED / "data" / "locomo" / "locomo10_dev.json", [0, 1]),
        "beam": (load_beam, SHARED / "data" / "beam" / "100K", [0, 1])}
"""Loader, path and the conversations read: two of each (231 LoCoMo questions, 36 BEAM
ones over two 100K-token chats) keep the check within a few minutes."""

OPTIONS = {
    "default": ({}, {}),
    "no excerpts": ({"search": {"excerpts": False}}, {}),
    "no supersession": ({"supersession": False}, {}),
    "no reranker": ({"reranker": {"kind": "none"}}, {}),
    "as_of": ({}, {"as_of": "2023-07-01"}),
}
"""Settings the store is opened with, and arguments every search of the check passes."""

DEEP, BUDGET = 40, 300


def shown(hits) -> list[tuple]:
    return [(h.memory.id, h.text, h.score, tuple(h.refs), h.rank) for h in hits]


@pytest.fixture(scope="module", params=sorted(DATA))
def dev_store(request, tmp_path_factory, embedder):
    load, path, select = DATA[request.param]
    if not path.exists():
        pytest.skip(f"{path} is absent (it ships beside CI's clone, not with the package)")
    convs = load(path, select)
    db = str(tmp_path_factory.mktemp(request.param) / "dev.sqlite")
    with ReflectiveMemory.open(db, embedder=embedder, progress=False) as mem:
        for conv in convs:
            ingest(mem, conv)
    return db, convs


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_every_cut_keeps_a_prefix_of_one_ordered_list(dev_store, embedder, option):
    db, convs = dev_store
    settings, arguments = OPTIONS[option]
    checked = 0
    with ReflectiveMemory.open(db, embedder=embedder, progress=False, **settings) as mem:
        for conv in convs:
            for q in conv.questions:
                def search(question=q.question, user=conv.sample_id, **kw):
                    return mem.search(question, user_id=user, **arguments, **kw)

                full = search(k=DEEP).hits
                scores = [h.score for h in full]
                assert all(0.0 <= s <= 1.0 for s in scores), q.question
                assert scores == sorted(scores, reverse=True), q.question
                assert [h.rank for h in full] == list(range(1, len(full) + 1))
                for a in (1, 5):
                    assert shown(search(k=a)) == shown(full[:a]), (q.question, a)
                budgeted = search(max_words=BUDGET).hits
                words = [count_words(h.text) for h in budgeted]
                assert sum(words) <= BUDGET, q.question
                assert shown(budgeted) == shown(full[:len(budgeted)]), q.question
                if len(budgeted) < len(full):  # it stopped where the next hit did not fit
                    assert sum(words) + count_words(full[len(budgeted)].text) > BUDGET
                if len(full) > 2:
                    floor = full[2].score
                    kept = search(k=DEEP, min_score=floor).hits
                    assert shown(kept) == shown([h for h in full if h.score >= floor])
                checked += 1
    assert checked == sum(len(c.questions) for c in convs)
