"""Hits cut to what bears on the question (`rmm_core.read.excerpt`): a list question over
several sessions reaches each session within a word budget, and a cut hit's refs name only
the turns whose words it still carries. Real SQLite file, the packaged embedder."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest

from rmm_core import ReflectiveMemory, Turn
from rmm_core.bench.metrics import fitting
from rmm_core.read.excerpt import EXCERPT_WORDS, GATHER_WORDS, WHOLE, excerpts, gathers
from rmm_core.types import Memory, MemoryHit

HOBBIES = ["pottery", "rock climbing", "the cello", "birdwatching", "sourdough baking"]
CHATTER = ["The weather on the coast was grey all week and the ferry was late again, so we "
           "sat in the harbour cafe and watched the boats come in while it rained.",
           "My cousin keeps sending photos of his new kitchen; the tiles are a bright orange "
           "colour and honestly I cannot decide whether I like them or not.",
           "The train strike means the commute takes twice as long, and the replacement "
           "buses are always full by the time they reach our stop in the morning."]


def _session(n: int) -> list[Turn]:
    """Bo's long chatter around Ana's one line about a hobby."""
    return [Turn("Bo", CHATTER[0], id=f"D{n}:1"),
            Turn("Ana", f"Oh no. By the way, my new hobby is {HOBBIES[n]}, I love it.",
                 id=f"D{n}:2"),
            Turn("Bo", CHATTER[1], id=f"D{n}:3"),
            Turn("Ana", "Ha, send me a picture.", id=f"D{n}:4"),
            Turn("Bo", CHATTER[2], id=f"D{n}:5")]


@pytest.fixture
def bank(tmp_path, embedder):
    def _open(**settings) -> ReflectiveMemory:
        mem = ReflectiveMemory.open(str(tmp_path / "bank.sqlite"), embedder=embedder,
                                    progress=False, **settings)
        if not mem.memories(user_id="u1"):
            start = datetime(2024, 3, 1)
            for n in range(len(HOBBIES)):
                mem.add_session(_session(n), user_id="u1", session_id=f"s{n}",
                                started_at=start + timedelta(days=7 * n))
        return mem

    opened: list[ReflectiveMemory] = []
    yield lambda **settings: opened.append(_open(**settings)) or opened[-1]
    for mem in opened:
        mem.close()


def _covered(mem: ReflectiveMemory, query: str, budget: int) -> set[str]:
    """The turns of the hits that fit `budget` words, taken in rank order (strict)."""
    ranked = [(h.text, h.refs) for h in mem.search(query, user_id="u1", k=20)]
    taken, _ = fitting(ranked, budget)
    return {r for _, refs in ranked[:taken] for r in refs}


def test_a_list_question_reaches_every_session_within_the_budget(bank):
    hobby_turns = {f"D{n}:2" for n in range(len(HOBBIES))}
    query = "What hobbies has Ana taken up?"
    assert gathers(query)
    whole = bank(search={"excerpts": False})
    assert not hobby_turns <= _covered(whole, query, 450)  # whole hits run out of words
    whole.close()
    assert hobby_turns <= _covered(bank(), query, 450)


def test_a_cut_hit_refs_only_the_turns_it_carries(bank):
    mem = bank()
    turns = {t.id: t for t in mem.turns(user_id="u1")}
    hits = mem.search("What hobbies has Ana taken up?", user_id="u1", k=10).hits
    cut = [h for h in hits if h.excerpt_refs is not None]
    assert cut, "no hit was cut"
    for hit in hits:
        body = hit.text.split("] ", 1)[1]  # after the date
        lines = body.split("\n")
        assert len(lines) == len(hit.refs)  # one line per turn it carries
        for line, ref in zip(lines, hit.refs):
            speaker, _, words = line.partition(": ")
            assert speaker == turns[ref].speaker
            assert all(w in turns[ref].text for w in words.split())
        assert hit.metadata()["refs"] == hit.refs
    assert all(set(h.refs) < set(h.memory.refs) for h in cut)
    assert all(line.startswith("Ana: ") for h in cut for line in h.text.split("] ", 1)[1]
               .split("\n"))  # the question names Ana: Bo's turns are left out


def test_the_first_hits_stay_whole_and_the_setting_turns_it_off(bank):
    mem = bank()
    query = "Which hobby did Ana pick up in March?"
    assert not gathers(query)
    hits = mem.search(query, user_id="u1", k=10).hits
    assert all(h.excerpt_refs is None and h.memory.text in h.text for h in hits[:WHOLE])
    assert any(h.memory.text not in h.text for h in hits[WHOLE:])
    mem.close()
    off = bank(search={"excerpts": False}).search(query, user_id="u1", k=10).hits
    assert all(h.memory.text in h.text and h.refs == h.memory.refs for h in off)


def test_a_gathering_question_cuts_the_later_hits_shorter(bank):
    query = "Summarise the hobbies Ana told me about, in order."
    assert gathers(query)
    hits = bank().search(query, user_id="u1", k=10).hits
    assert all(len(h.text.split()) <= GATHER_WORDS for h in hits[WHOLE:])
    assert any(len(h.text.split()) > GATHER_WORDS for h in hits[:WHOLE])
    assert {f"D{n}:2" for n in range(len(HOBBIES))} <= {r for h in hits[:5] for r in h.refs}


@pytest.mark.parametrize("query", [
    "What activities has Melanie done with her family?", "Which cities has Jon visited?",
    "How many times did I change the database schema?",
    "Can you list the order in which I brought up the features?",
    "Give me a summary of how my weather app progressed."])
def test_list_count_order_and_summary_questions_gather(query):
    assert gathers(query)


@pytest.mark.parametrize("query", [
    "What did Caroline research?", "When did Melanie paint a sunrise?",
    "What is Caroline's relationship status?", "Where does Jon work now?"])
def test_questions_about_one_thing_do_not_gather(query):
    assert not gathers(query)


def _hit(text: str, refs: list[str], speakers: list[str], rank: int) -> MemoryHit:
    memory = Memory(id=f"m{rank}", user_id="u1", text=text, key=text, refs=refs,
                    speakers=speakers)
    return MemoryHit(memory, 0.5, f"[1 May 2024] {text}", rank)


def test_a_long_passage_keeps_the_sentences_the_question_shares_words_with():
    filler = " ".join(f"Sentence {i} is about the weather and nothing else." for i in range(12))
    text = f"user: {filler} I moved the budget tracker to PostgreSQL in April. {filler}"
    hits = [_hit("user: hello.", ["0"], ["user"], 0), _hit("user: hi.", ["1"], ["user"], 1),
            _hit(text, ["7"], ["user"], 2)]
    out = excerpts(hits, "Which database did the budget tracker move to?", np.zeros(4), {})
    assert out[:WHOLE] == hits[:WHOLE]
    cut = out[2]
    assert "PostgreSQL" in cut.text
    assert len(cut.text.split()) <= EXCERPT_WORDS
    assert cut.text.startswith("[1 May 2024] user: ")
    assert cut.refs == ["7"]


def test_a_memory_whose_lines_are_not_its_turns_is_left_whole():
    text = "user: first line\nsecond line of the same message\nthird line " + "x " * 80
    hits = [_hit("user: a.", ["0"], ["user"], 0), _hit("user: b.", ["1"], ["user"], 1),
            _hit(text, ["5", "6"], ["user"], 2)]
    assert excerpts(hits, "first line?", np.zeros(4), {})[2] == hits[2]


def test_a_hit_that_fits_stays_as_it_was_unless_a_named_speaker_is_kept():
    short = "Ana: We went to  the coast.   It rained.\nBo: Lovely, send photos!"
    hits = [_hit("user: a.", ["0"], ["user"], 0), _hit("user: b.", ["1"], ["user"], 1),
            _hit(short, ["3", "4"], ["Ana", "Bo"], 2)]
    assert excerpts(hits, "Where did they go?", np.zeros(4), {})[2] == hits[2]
    # a question naming Ana keeps Ana's turn only, however short the hit
    cut = excerpts(hits, "Where did Ana go?", np.zeros(4), {})[2]
    assert "Bo:" not in cut.text
    assert cut.refs == ["3"]
