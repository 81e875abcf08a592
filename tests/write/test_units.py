"""Units sized by words: long turns as sentence passages, short turns grouped, every hit within
`max_hit_words`, and refs naming only turns whose words a hit carries. Real embedder, real
SQLite file; no LLM."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from rmm_core import Turn
from rmm_core.language.timeref import ground
from rmm_core.language.units import fit_units, passages, words

SENTENCES = [f"Fact number {i} is that the {w} sits near marker {i * 7}." for i, w in
             enumerate(["lamp", "river", "kettle", "ladder", "violin"] * 200)]
LONG = " ".join(SENTENCES)  # 1,000 sentences, 11,000 words
KEY = "The spare key is hidden under the blue flowerpot."


def _words(text: str) -> list[str]:
    return text.split()


def _norm(text: str) -> str:
    return " ".join(text.split())


def _sentences(chunk: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?;:])\s+", chunk) if s]


def _chunks(hit_text: str) -> list[str]:
    """The turn texts a hit carries: its text without the date, split at `speaker: `."""
    body = re.sub(r"^\[\d+ \w+ \d{4}\] ", "", hit_text)
    return [_norm(c) for c in re.split(r"(?:^|\n)(?:Ana|assistant): ", body) if c.strip()]


def test_a_10000_word_turn_becomes_whole_sentence_passages_that_fit():
    turn = Turn("assistant", LONG, id="a1")
    parts = passages(turn, 120)
    assert len(parts) > 80
    assert all(words(p) <= 120 for p in parts)
    assert all(p.id == "a1" and p.speaker == "assistant" for p in parts)
    assert [w for p in parts for w in _words(p.text)] == _words(LONG)  # nothing lost
    assert all(p.text.endswith(".") for p in parts)  # cut between sentences only
    sizes = [len(_words(p.text)) for p in parts]
    assert min(sizes) >= max(sizes) // 2  # about equal sizes, no stub at the end


def test_a_sentence_longer_than_the_budget_is_cut_between_words():
    turn = Turn("assistant", " ".join(f"w{i}" for i in range(10_000)), id="a1")
    parts = passages(turn, 50)
    assert all(words(p) <= 50 for p in parts)
    assert [w for p in parts for w in _words(p.text)] == _words(turn.text)


def test_passages_keep_line_breaks_and_cut_at_them():
    text = "\n".join(f"- step {i}: open the valve and wait." for i in range(60))
    parts = passages(Turn("assistant", text, id="a1"), 100)
    assert len(parts) > 1
    assert all(words(p) <= 100 for p in parts)
    assert "\n".join(p.text for p in parts) == text


def test_short_turns_stay_whole_and_a_long_turn_never_shares_a_unit():
    turns = [Turn("user", "I adopted a beagle called Biscuit.", id="u1"),
             Turn("assistant", LONG[:3000], id="a1"),
             Turn("user", "Thanks!", id="u2"), Turn("user", "One more thing.", id="u3")]
    split = [passages(t, 100) for t in turns]
    pieces = [p for parts in split for p in parts]
    assert pieces[0] is turns[0]
    assert pieces[-1] is turns[-1]
    units = fit_units(split, [[0, 1, 2, 3]], 100)
    for unit in units:
        ids = {pieces[p].id for p in unit}
        assert ids <= {"a1"} or "a1" not in ids
    assert [pieces[p].id for p in units[-1]] == ["u2", "u3"]  # short turns grouped


def test_one_word_turns_group_up_to_the_budget():
    turns = [Turn("A" if i % 2 else "B", f"w{i}", id=str(i)) for i in range(500)]
    units = fit_units([[t] for t in turns], [list(range(500))], 40)
    assert [p for u in units for p in u] == list(range(500))
    assert all(sum(words(turns[p]) for p in u) <= 40 for u in units)
    assert all(len(u) == 20 for u in units)  # 2 words a line: exactly 20 lines fill 40 words


@pytest.fixture
def mem(open_memory):
    return open_memory(search={"max_hit_words": 100})


def test_hits_fit_max_hit_words_and_refs_name_only_turns_the_text_carries(mem):
    turns = [Turn("Ana", "I adopted a beagle called Biscuit last week.", id="u1"),
             Turn("assistant", LONG.replace("marker 3500.", "marker 3500. " + KEY), id="a1"),
             Turn("Ana", "My sister Lena lives in Porto and teaches violin.", id="u2")]
    mem.add_session(turns, user_id="ana", started_at="2024-03-15T09:30:00")
    texts = {t.id: ground(t.text, datetime(2024, 3, 15, 9, 30)) for t in turns}  # as reflected
    memories = mem.memories(user_id="ana")
    assert len(memories) > 90
    for query in ("Where does Ana's sister live?", "Where is the spare key?", "kettle"):
        for hit in mem.search(query, user_id="ana", k=50):
            assert len(hit.text.split()) <= 100
            carried = [{r for r in hit.refs  # an excerpt may leave sentences out between
                        if all(s in _norm(texts[r]) for s in _sentences(chunk))}
                       for chunk in _chunks(hit.text)]
            assert all(carried)  # every line is words of a turn it names
            assert set().union(*carried) == set(hit.refs)  # and every turn named has a line
    top = mem.search("Where is the spare key hidden?", user_id="ana", k=1)[0]
    assert top.refs == ["a1"]
    assert KEY in top.text


def test_a_merge_that_would_pass_the_budget_adds_instead(open_memory):
    mem = open_memory(search={"max_hit_words": 20})
    session = [Turn("Ana", "I adopted a beagle called Biscuit and he loves long walks.")]
    mem.add_session(session, user_id="ana", session_id="s1")
    mem.add_session(session, user_id="ana", session_id="s2")  # the same text again: a
    # near-duplicate, said in another session (the same session again would add nothing)
    assert [len(m.text.split()) <= 17 for m in mem.memories(user_id="ana")] == [True, True]
    roomy = open_memory(search={"max_hit_words": 200})
    roomy.add_session(session, user_id="bo", session_id="s1")
    roomy.add_session(session, user_id="bo", session_id="s2")
    assert len(roomy.memories(user_id="bo")) == 1  # it fits: merged as before


@pytest.mark.backends
def test_the_users_own_words_rank_above_the_assistants_answer_on_the_same_subject(open_memory):
    """In a user-assistant chat the facts about the user are in the user's words; the
    assistant's answer repeating them still ranks, just below (assistant_weight)."""
    answer = " ".join(["Your first sprint ends on March 29, so the first sprint's login work "
                       "must be done before the first sprint ends on March 29."] * 8)
    session = [Turn("user", "My first sprint ends on March 29 and covers login.", id="u1"),
               Turn("assistant", answer, id="a1"),
               Turn("user", "Also, I deploy the app on Render.", id="u2")]
    query = "When does my first sprint end?"
    hand_set = {"reranker": {"kind": "none"}}  # the fusion alone (the learned one has its own)
    plain = open_memory(fusion={"assistant_weight": 0.0}, **hand_set)
    plain.add_session(session, user_id="craig")
    assert plain.search(query, user_id="craig", k=1)[0].refs == ["a1"]
    mem = open_memory(**hand_set)
    hits = mem.search(query, user_id="craig", k=10)
    assert hits[0].refs == ["u1"]
    assert "a1" in {r for h in hits for r in h.refs}  # ranked lower, not dropped
    # no prior for "assistant"
    named = open_memory(fusion={"assistant_speakers": ["bot"]}, **hand_set)
    assert named.search(query, user_id="craig", k=1)[0].refs == ["a1"]


def test_the_assistant_prior_holds_for_turns_of_an_open_session(open_memory):
    """Turns not yet reflected (provisional hits) are lowered like the assistant's memories."""
    answer = " ".join(["Your first sprint ends on March 29, so the first sprint's login work "
                       "must be done before the first sprint ends on March 29."] * 8)
    mem = open_memory(fusion={"assistant_weight": 3.0})
    mem.append([Turn("user", "Login is what I work on until March 29.", id="u1"),
                Turn("assistant", answer, id="a1")], user_id="craig", session_id="s1")
    hits = mem.search("When does my first sprint end?", user_id="craig", k=5)
    assert [h.refs for h in hits[:2]] == [["u1"], ["a1"]]
    plain = open_memory(fusion={"assistant_weight": 0.0})
    assert plain.search("When does my first sprint end?", user_id="craig", k=1)[0].refs == ["a1"]
