"""The order of later hits for a question that gathers (`rmm_core.read.gather`): new turns
before repeats, small talk last for a judgement. Hand-built hits for the rules, then a
search over a real SQLite file with the packaged embedder."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from rmm_core import ReflectiveMemory, Turn
from rmm_core.read.excerpt import WHOLE, gathers, judges
from rmm_core.read.explain import format_explanation
from rmm_core.read.gather import gathered, gathered_upto
from rmm_core.types import Memory, MemoryHit

SAID = ["I bake sourdough every Sunday and I am taking a pastry course at the college.",
        "My grandmother taught me her dumpling recipe, I make them for every birthday.",
        "I grow basil, thyme and chillies on the balcony for my curries.",
        "We drove to the coast and I photographed the lighthouse at dawn."]
SMALL_TALK = ["Thanks, that is so awesome!", "Haha, that is great, thanks!",
              "Wow, so awesome, thanks!"]


def _hit(text: str, rank: int, refs: list[str] | None = None) -> MemoryHit:
    memory = Memory(id=f"m{rank}", user_id="u1", text=f"Ana: {text}", key=text,
                    refs=[f"D{rank}:1"] if refs is None else refs, speakers=["Ana"],
                    occurred_at=datetime(2024, 3, 1))
    return MemoryHit(memory, 0.5, f"[1 March 2024] Ana: {text}", rank)


def _hits() -> list[MemoryHit]:
    """Two head hits, then small talk mixed among what Ana said."""
    texts = [SAID[0], SAID[1], SMALL_TALK[0], SAID[2], SMALL_TALK[1], SAID[3], SMALL_TALK[2],
             "Thanks, that is great!"]
    return [_hit(t, i) for i, t in enumerate(texts)]


@pytest.mark.parametrize("query", [
    "Would Ana enjoy a cooking class?", "What job might Ana pursue?",
    "What would Ana's political leaning likely be?",
    "What tools would you suggest I use for my essay?"])
def test_questions_that_ask_for_a_judgement_judge_and_gather(query):
    assert judges(query)
    assert gathers(query)


@pytest.mark.parametrize("query", [
    "What did Ana bake on Sunday?", "When did Ana drive to the coast?",
    "Where does Ana grow basil?"])
def test_questions_about_a_stated_fact_do_not_judge(query):
    assert not judges(query)


def test_a_judging_question_moves_the_most_common_words_last():
    hits = _hits()
    out = gathered(hits, "Would Ana enjoy a cooking class?")
    assert out[:WHOLE] == hits[:WHOLE]
    # six later hits: the two whose words are commonest among all eight go last, in order
    assert [h.memory.id for h in out[WHOLE:]] == ["m3", "m4", "m5", "m6", "m2", "m7"]


def test_a_question_about_one_thing_keeps_the_order():
    hits = _hits()
    assert gathered(hits, "What did Ana bake on Sunday?") == hits


def test_a_gathering_question_puts_repeated_turns_after_new_ones():
    texts = ["one", "two", "three", "four", "five", "six"]
    refs = [["D1:1"], ["D2:1"], ["D1:1"], ["D3:1"], [], ["D3:1", "D4:1"]]
    hits = [_hit(t, i, r) for i, (t, r) in enumerate(zip(texts, refs))]
    out = gathered(hits, "Which cities has Ana visited?")
    # m2 only repeats D1:1 (a head hit's turn); m4 names no turn, so it is its own source
    assert [h.memory.id for h in out] == ["m0", "m1", "m3", "m4", "m5", "m2"]
    assert gathered(hits, "Where does Ana live?") == hits


@pytest.mark.parametrize("query", ["Which cities has Ana visited?",
                                   "Would Ana enjoy a cooking class?"])
def test_the_first_hits_of_a_gathering_are_those_of_the_whole_order(query):
    refs = [["D1:1"], ["D2:1"], ["D1:1"], ["D2:1"], ["D3:1"], ["D1:1"], ["D4:1"], [],
            ["D3:1", "D5:1"], ["D5:1"]]
    hits = [_hit(f"said {i}", i, r) for i, r in enumerate(refs)]
    whole = gathered(hits, query)
    read: list[int] = []

    def cut(end: int) -> list[MemoryHit]:
        read.append(end)
        return hits[:end]

    for need in range(1, len(hits) + 2):
        first, complete = gathered_upto(hits, cut, query, need)
        assert first[:need] == whole[:need]
        assert complete == (first == whole)
    read.clear()
    gathered_upto(hits, cut, query, 3)
    # the third hit of a fact question's order is m4, the first new turn after the head:
    # the hits are cut three deep, then one more per new hit still missing (m2 and m3 repeat
    # the head's turns); a judgement weighs (and cuts) them all
    assert read == ([len(hits)] if judges(query) else [3, 4, 5])


def test_a_fact_gathering_question_keeps_small_talk_in_place():
    hits = _hits()
    assert gathered(hits, "Which dishes has Ana cooked?") == hits


def test_few_later_hits_keep_their_order():
    hits = _hits()[:WHOLE + 3]
    assert gathered(hits, "Would Ana enjoy a cooking class?") == hits


def test_a_search_for_a_judgement_puts_small_talk_last(tmp_path, embedder):
    mem = ReflectiveMemory.open(str(tmp_path / "bank.sqlite"), embedder=embedder,
                                progress=False)
    start = datetime(2024, 3, 1)
    for n in range(12):
        turns = [Turn("Bo", "How was your week, Ana?", id=f"D{n}:1"),
                 Turn("Ana", SAID[n % len(SAID)] if n % 3 == 0 else
                      SMALL_TALK[n % len(SMALL_TALK)], id=f"D{n}:2")]
        mem.add_session(turns, user_id="u1", session_id=f"s{n}",
                        started_at=start + timedelta(days=7 * n))
    query = "Would Ana enjoy a cooking class?"
    on = mem.search(query, user_id="u1", k=12).hits
    off = ReflectiveMemory.open(str(tmp_path / "bank.sqlite"), embedder=embedder,
                                progress=False, search={"excerpts": False})
    plain = off.search(query, user_id="u1", k=12).hits
    mem.close()
    off.close()
    assert {h.memory.id for h in on} == {h.memory.id for h in plain}
    small = {h.memory.id for h in plain if any(t in h.text for t in SMALL_TALK)}
    tail = [h.memory.id for h in on[-(len(on) - WHOLE) // 4:]]
    assert tail
    assert set(tail) <= small
    assert [h.rank for h in on] == list(range(1, len(on) + 1))


def test_the_explanation_names_gathering_as_what_moved_a_hit(tmp_path, embedder):
    mem = ReflectiveMemory.open(str(tmp_path / "bank.sqlite"), embedder=embedder,
                                progress=False)
    for n in range(12):
        mem.add_session([Turn("Ana", SAID[n % len(SAID)] if n % 3 == 0 else
                              SMALL_TALK[n % len(SMALL_TALK)], id=f"D{n}:1")],
                        user_id="u1", session_id=f"s{n}")
    result = mem.search("Would Ana enjoy a cooking class?", user_id="u1", k=12, explain=True)
    mem.close()
    rows = result.explanation.hits
    assert any(name == "gathering" for r in rows for name, _, _ in r.moved)
    for row in rows:  # each row's moves chain from its rerank place to its final place
        places = [row.rerank_rank, *(after for _, _, after in row.moved)]
        assert places[-1] == row.final_rank
        assert all(before == prev for (_, before, _), prev in zip(row.moved, places))
    assert "moved: gathering" in format_explanation(result.explanation)
