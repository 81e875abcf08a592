"""`rmm bench excerpts`: the shares of the answer each cut keeps, on hand-built hits, and the
command end to end on small JSON Lines conversations, its count checked by a recount."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rmm_core import ReflectiveMemory
from rmm_core.bench.excerpts import CUTS, answer_tokens, excerpt_of, measure, shares
from rmm_core.bench.jsonl import load_jsonl
from rmm_core.bench.records import ingest
from rmm_core.cli import main
from rmm_core.language.tokens import english_stemmer, tokenize
from rmm_core.models.embed import default_embedder
from rmm_core.ops.commands import BAD_DATA
from rmm_core.read.context import hit_text
from rmm_core.types import Memory, MemoryHit

DATA = Path(__file__).parents[1] / "data" / "conversations.jsonl"
FILLER = ("Honestly the week was busy with work and errands and the usual chores around the "
          "flat. The neighbours were loud again on Saturday night and I slept badly. My "
          "sister called about her new job in the city and her long commute.")
ANSWER = "Biscuit chewed the blue water bowl I glazed."
WHOLE = f"Ana: {FILLER} {FILLER} {ANSWER}"
FIGURES = {"dataset", "data", "command", "conversations", "questions", "hits", "excerpted",
           "questions with an excerpt", "draws", "seed", "considered", *CUTS,
           "gain over random", "gain 95% half-width", "excerpt words", "memory words",
           "categories"}


def hit(text: str, whole: str = WHOLE) -> MemoryHit:
    memory = Memory(id="m1", user_id="u", text=whole, key=whole, refs=["t1"],
                    speakers=["Ana"])
    return MemoryHit(memory, 0.5, text, 3)


def unit_or_nan(value: float) -> bool:
    return math.isnan(value) or 0.0 <= value <= 1.0


def test_an_excerpt_keeping_the_answer_sentence_beats_a_head_cut_that_misses_it():
    stemmer = english_stemmer()
    answer = answer_tokens("the blue water bowl Biscuit chewed", stemmer)
    excerpt = f"Ana: {ANSWER}"
    found = shares(excerpt, WHOLE, answer, stemmer, np.random.default_rng(0))
    assert found is not None
    kept, random, head = found
    assert kept == 1.0
    assert head == 0.0
    assert 0.0 < random < 1.0  # only runs at the very end reach the answer


def test_a_memory_without_the_answer_and_a_whole_hit_are_not_measured():
    stemmer, rng = english_stemmer(), np.random.default_rng(0)
    assert shares("Ana: hello", WHOLE, answer_tokens("a ukulele", stemmer), stemmer, rng) is None
    whole = hit(hit_text(Memory(id="m1", user_id="u", text=WHOLE, key=WHOLE, refs=["t1"])))
    noted = hit(WHOLE + "\n(replaced by a newer memory)")
    cut = hit(f"Ana: {ANSWER}")
    assert excerpt_of(whole) is None
    assert excerpt_of(noted) is None
    assert excerpt_of(cut) == f"Ana: {ANSWER}"
    count, rows = measure([whole, noted, cut, hit("Ana: Honestly the week was busy.")],
                          "a blue bowl", "4 single-hop", stemmer, rng)
    assert count == 2
    assert [(r.excerpt, r.head, r.category) for r in rows] == [(1.0, 0.0, "4 single-hop"),
                                                                 (0.0, 0.0, "4 single-hop")]


def long_conversations(path: Path) -> Path:
    """A conversation of five long sessions that each name the dog past a head cut's reach,
    so that later hits are cut and some of them hold the answer."""
    facts = ["I glazed a blue water bowl for Biscuit in pottery class.",
             "We hiked up Ben Nevis with Biscuit and my boots leaked.",
             "Biscuit dug up the tomatoes in my garden.",
             "I baked a sourdough loaf and Biscuit stole the crust.",
             "I started the cello and Biscuit howls along every Thursday."]
    lines = [{"conversation": "ana", "session": f"s{n}", "date": f"2024-0{n + 1}-10",
              "turns": [{"id": f"{n}-1", "speaker": "Ana", "text": f"{FILLER} {FILLER} {fact}"},
                        {"id": f"{n}-2", "speaker": "Ben", "text": f"Wow. {FILLER}"}]}
             for n, fact in enumerate(facts)]
    lines += [{"conversation": "ana", "question": q, "evidence": ["0-1"], "answer": a}
              for q, a in [("What is the name of Ana's dog?", "Biscuit"),
                           ("What did Ana glaze in pottery class?", "a blue water bowl")]]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def recount(path: Path) -> tuple[int, int, int]:
    """Hits, excerpted hits and those whose memory holds an answer token, counted directly
    from a fresh store's searches."""
    stemmer = english_stemmer()
    hits = cut = considered = 0
    mem = ReflectiveMemory.open(":memory:", embedder=default_embedder(), progress=False)
    try:
        for conv in load_jsonl(path):
            ingest(mem, conv)
            for q in conv.questions:
                answer = set(tokenize([q.answer], stemmer)[0])
                for h in mem.search(q.question, user_id=conv.sample_id, max_words=1000):
                    hits += 1
                    if h.text != hit_text(h.memory) and h.memory.text not in h.text:
                        cut += 1
                        considered += bool(answer & set(tokenize([h.memory.text], stemmer)[0]))
    finally:
        mem.close()
    return hits, cut, considered


@pytest.mark.parametrize("data", ["packaged", "long"])
def test_the_command_prints_and_writes_figures_matching_a_recount(data, tmp_path, capsys):
    path = DATA if data == "packaged" else long_conversations(tmp_path / "long.jsonl")
    out, page = tmp_path / "excerpts.json", tmp_path / "page.md"
    assert main(["--no-progress", "bench", "excerpts", "--dataset", "jsonl", "--data",
                 str(path), "--json", str(out), "--markdown", str(page)]) == 0
    printed = capsys.readouterr().out
    print(printed)
    figures = json.loads(out.read_text())
    assert set(figures) == FIGURES
    assert (figures["hits"], figures["excerpted"], figures["considered"]) == recount(path)
    rows = [figures, *figures["categories"].values()]
    assert all(unit_or_nan(row[c]) for row in rows for c in CUTS)
    assert sum(row["considered"] for row in figures["categories"].values()) == \
        figures["considered"]
    assert f"#### Excerpts keep the answer: {path.name}" in page.read_text()
    if data == "packaged":
        assert "No hit was cut" in printed
    else:
        assert figures["considered"] > 0
        assert "excerpt keeps" in printed
        assert figures["excerpt"] >= figures["head"]


def test_unreadable_data_is_bad_data(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert main(["bench", "excerpts", "--dataset", "jsonl", "--data", str(bad)]) == BAD_DATA
    assert main(["bench", "excerpts", "--dataset", "jsonl"]) == BAD_DATA
    assert "cannot read" in capsys.readouterr().err


def test_the_long_message_set_in_five_languages_loads_with_its_promised_shape():
    """`tests/data/excerpts_langs.jsonl`: 40 users writing long messages, 200 questions each
    answered by one sentence of one turn (never its first), in de, fr, es, it and pt."""
    convs = load_jsonl(Path(__file__).resolve().parent.parent / "data" / "excerpts_langs.jsonl")
    questions = [q for c in convs for q in c.questions]
    assert len(convs) == 40
    assert len(questions) == 200
    assert sorted({q.category for q in questions}) == ["de", "es", "fr", "it", "pt"]
    turns = {t.id: t.text for c in convs for s in c.sessions for t in s.turns}
    for q in questions:
        (ref,) = q.evidence
        said = turns[ref].lower()
        assert q.answer.lower() in said, q.question
        assert 90 <= len(turns[ref].split()) <= 220
