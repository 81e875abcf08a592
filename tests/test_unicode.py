"""Text in any script, emoji, lone surrogates and control characters at every public method.

Memory-level tests run the real packaged embedder on a SQLite file with the LLM-free
pipeline (no LLM, no fakes). The hypothesis suite prints how many inputs it ran (`-s`).
`test_control_characters_are_stored_as_given` and `test_english_terms_are_bm25s_default_ones`
guard behaviour that already held; every other test here failed before the fix it covers.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmm_core import InvalidInputError, ReflectiveMemory, RMMError, Turn
from rmm_core.agents.tools import search_turns
from rmm_core.read.index import english_stemmer, tokenize
from rmm_core.write.compress import FillerCompressor
from rmm_core.write.reconcile import ThresholdReconciler

# Three sentences per script, each its own session; the query is a word of the last one,
# so a ranking that ignores the words (ties, or the first stored) cannot pass.
SCRIPTS = {
    "latin": (["Je préfère le café au lait le matin.", "Nous avons visité Kraków en été.",
               "Ich habe in München einen Hund adoptiert."], "München"),
    "cyrillic": (["Я люблю пить чай с лимоном.", "Вчера я взял из приюта собаку.",
                  "Мы ездили в Новосибирск зимой."], "Новосибирск"),
    "greek": (["Μου αρέσει ο καφές το πρωί.", "Χθες υιοθέτησα ένα σκυλί.",
               "Πήγαμε στη Θεσσαλονίκη το καλοκαίρι."], "Θεσσαλονίκη"),
    "arabic": (["أحب شرب القهوة في الصباح.", "تبنيت كلبا صغيرا أمس.",
                "سافرنا إلى القاهرة في الصيف."], "القاهرة"),
    "hebrew": (["אני אוהב לשתות קפה בבוקר.", "אימצתי כלב קטן אתמול.",
                "נסענו לירושלים בקיץ."], "לירושלים"),
    "devanagari": (["मुझे सुबह चाय पीना पसंद है।", "हम गर्मियों में समुद्र तट गए थे।",
                    "मैंने कल दिल्ली में एक कुत्ता गोद लिया।"], "दिल्ली"),
    "thai": (["ฉันชอบดื่มกาแฟตอนเช้า", "เมื่อวานฉันรับเลี้ยงลูกสุนัข",
              "เราไปเที่ยวเชียงใหม่ช่วงฤดูร้อน"], "เชียงใหม่"),
    "han": (["我每天早上喝咖啡。", "我们夏天去了北京旅游。", "我昨天在上海领养了一只小狗。"],
            "小狗"),
    "kana": (["まいあさ おちゃを のみます。", "なつに ほっかいどうへ いきました。",
              "きのう コーヒーを かいました。"], "コーヒー"),
    "hangul": (["아침마다 차를 마셔요.", "여름에 부산에 갔어요.", "어제 강아지를 입양했어요."],
               "강아지"),
}

NEVER_MERGE = ThresholdReconciler(threshold=2.0)
"""English MiniLM reads all of a Thai text as one unknown token: every such text gets the
same vector, and would merge into one memory."""


@pytest.fixture
def mem(tmp_path, embedder):
    m = ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder,
                              sessions={"idle_timeout": None})
    yield m
    m.close()


# defects ------------------------------------------------------------------------------------
def test_chinese_word_is_found_in_unspaced_text(mem):
    mem.add_session([Turn("用户", "我昨天在上海领养了一只小狗。")], user_id="zh")
    mem.add_session([Turn("用户", "我每天早上喝咖啡。")], user_id="zh")
    for query in ("小狗", "狗"):
        found = mem.search(query, user_id="zh", k=2)  # the ranking's scores: `retrieval`
        assert "小狗" in found[0].text
        assert found.candidates[0].retrieval > found.candidates[1].retrieval


@pytest.mark.parametrize("texts", [["😀🎉", "🐶"], ["ok"], ["?!", "..."], ["ok", "😀"]])
def test_search_works_when_no_key_has_a_term(mem, texts):
    for text in texts:
        mem.add_session([Turn("a", text)], user_id="u")
    every = {m.id for m in mem.memories(user_id="u")}
    for query in (texts[-1], "😀", "ok", "a puppy"):
        assert {h.memory.id for h in mem.search(query, user_id="u", k=5)} == every


def test_compressor_keeps_words_of_any_script_whole():
    keys = FillerCompressor().compress(["We flew to München, then Kraków.",
                                        "मैंने दिल्ली देखी", "Я был в Москве"])
    assert keys == ["flew München Kraków", "मैंने दिल्ली देखी", "Я был в Москве"]


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_bm25_alone_finds_the_word_in_every_script(tmp_path, embedder, script):
    sentences, query = SCRIPTS[script]
    mem = ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder,
                                fusion={"dense_weight": 0.0, "turn_weight": 0.0,
                                        "neighbour_smoothing": 0.0},
                                reconciler=NEVER_MERGE)
    for text in sentences:
        mem.add_session([Turn("a", text)], user_id="u")
    found = mem.search(query, user_id="u", k=3)  # the ranking's scores: `retrieval`
    assert found[0].memory.text.endswith(sentences[-1])
    assert found.candidates[0].retrieval > found.candidates[1].retrieval
    mem.close()


def test_conversation_search_takes_any_script_and_termless_turns():
    turns = [Turn("a", "😀"), Turn("用户", "我昨天在上海领养了一只小狗。")]
    assert search_turns(turns[:1], "ok") == []
    assert search_turns(turns, "小狗") == turns[1:]


def test_english_terms_are_bm25s_default_ones(locomo_path):
    """English keeps bm25s's own tokenisation (words of 2+ characters, stop words, stems)."""
    import bm25s

    data = json.loads(locomo_path.read_text())
    texts = [turn["text"] for conv in data for key, session in conv["conversation"].items()
             if key.startswith("session_") and isinstance(session, list) for turn in session]
    stemmer = english_stemmer()
    before = bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)
    assert len(texts) > 2000
    assert tokenize(texts, stemmer) == [stemmer(row) if row else row for row in before]


SURROGATE = "bad\ud800text"


def test_lone_surrogates_are_typed_errors_and_write_nothing(mem):
    mem.add_session([Turn("a", "a puppy")], user_id="u")
    before = mem.turns(user_id="u")
    calls = [lambda: mem.append(Turn("a", SURROGATE), user_id="u", session_id="s"),
             lambda: mem.append(Turn(SURROGATE, "hi"), user_id="u", session_id="s"),
             lambda: mem.append(Turn("a", "hi", id=SURROGATE), user_id="u", session_id="s"),
             lambda: mem.append([Turn("a", "fine"), Turn("a", SURROGATE)], user_id="u",
                                session_id="s"),
             lambda: mem.append(Turn("a", "hi"), user_id=SURROGATE, session_id="s"),
             lambda: mem.append(Turn("a", "hi"), user_id="u", session_id=SURROGATE),
             lambda: mem.add_session([Turn("a", SURROGATE)], user_id="u"),
             lambda: mem.search(SURROGATE, user_id="u"),
             lambda: mem.rerank_texts(SURROGATE, ["a"], user_id="u"),
             lambda: mem.rerank_texts("q", [SURROGATE], user_id="u"),
             lambda: mem.recall(SURROGATE, user_id="u"),
             lambda: mem.turns(user_id=SURROGATE),
             lambda: mem.forget(user_id=SURROGATE)]
    for call in calls:
        with pytest.raises(InvalidInputError, match="surrogate"):
            call()
    assert mem.turns(user_id="u") == before
    assert mem.store.users() == ["u"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), 1e20, -1e20])
def test_non_finite_or_unrepresentable_timestamps_are_typed_errors(mem, bad):
    with pytest.raises(InvalidInputError, match="epoch"):
        mem.append(Turn("a", "hi", timestamp=bad), user_id="u", session_id="s")
    with pytest.raises(InvalidInputError, match="epoch"):
        mem.add_session([Turn("a", "hi")], user_id="u", started_at=bad)
    assert mem.store.users() == []


def test_control_characters_are_stored_as_given(mem):
    texts = ["nul\x00inside", "bell\x07 esc\x1b[31m del\x7f", "zw\u200bj rtl\u202e bom\ufeff",
             "c1\x85\x9f", "tab\tcr\r\nlf"]
    mem.add_session([Turn("a", t) for t in texts], user_id="u")
    assert [t.text for t in mem.turns(user_id="u")] == texts
    assert mem.search("bell esc", user_id="u").hits


def test_a_huge_query_is_cut_to_max_query_chars(mem):
    mem.add_session([Turn("a", "I adopted a puppy in Shanghai yesterday.")], user_id="u")
    query = "puppy " * 2_000_000  # 12 MB
    started = time.perf_counter()
    result = mem.search(query, user_id="u")
    assert time.perf_counter() - started < 5.0
    assert result.query == query[:10_000]
    assert result.hits
    mem.config.search.max_query_chars = 100
    assert mem.search(query, user_id="u").query == query[:100]


# every public method, every script ------------------------------------------------------------
def _chars(*ranges: tuple[int, int]) -> st.SearchStrategy[str]:
    return st.one_of(*(st.integers(lo, hi) for lo, hi in ranges)).map(chr)


ALPHABETS = {
    "latin": _chars((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xFF), (0x100, 0x17F)),
    "cyrillic": _chars((0x410, 0x44F)),
    "greek": _chars((0x391, 0x3A9), (0x3AC, 0x3CE)),
    "arabic": _chars((0x621, 0x64A), (0x64B, 0x652)),
    "hebrew": _chars((0x5D0, 0x5EA), (0x5B0, 0x5BC)),
    "devanagari": _chars((0x905, 0x939), (0x93E, 0x94D)),
    "thai": _chars((0xE01, 0xE3A), (0xE40, 0xE4E)),
    "han": _chars((0x4E00, 0x9FFF)),
    "kana": _chars((0x3041, 0x3096), (0x30A1, 0x30FA), (0x30FC, 0x30FC)),
    "hangul": _chars((0xAC00, 0xD7A3)),
    "emoji": _chars((0x1F300, 0x1F64F), (0x1F680, 0x1F6FF), (0x200D, 0x200D), (0xFE0F, 0xFE0F)),
    "control": _chars((0x0, 0x1F), (0x7F, 0x9F), (0x200B, 0x200F), (0x202A, 0x202E)),
    "surrogate": _chars((0xD800, 0xDFFF)),
}
SEEN: Counter[str] = Counter()


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Words of one or more scripts, emoji and control characters; one text in ten also
    holds a lone surrogate."""
    words = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(sorted(set(ALPHABETS) - {"surrogate"})))
        words.append(draw(st.text(ALPHABETS[kind], min_size=1, max_size=8)))
        SEEN[kind] += 1
    if draw(st.integers(0, 9)) == 0:
        words.insert(draw(st.integers(0, len(words))), draw(ALPHABETS["surrogate"]))
        SEEN["surrogate"] += 1
    return draw(st.sampled_from([" ", "", "\n", ", "])).join(words)


def _outcome(call):
    """The call's value, or the RMMError it raised; any other exception fails the test."""
    try:
        return call()
    except RMMError as exc:
        return exc


def _ok(value) -> bool:
    return not isinstance(value, RMMError)


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def test_every_public_method_takes_any_text(mem):
    """Each input goes through append, end_session, add_session, search, feedback, memories,
    rerank_texts, recall and forget (every tenth also through the async twins)."""
    runs: Counter[str] = Counter()

    @settings(max_examples=120, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(text=texts(), other=texts(), speaker=st.one_of(st.just("ann"), texts()),
           as_id=st.booleans())
    def drive(text: str, other: str, speaker: str, as_id: bool) -> None:
        runs["inputs"] += 1
        user = f"{text}#{uuid.uuid4().hex[:6]}" if as_id else f"u{uuid.uuid4().hex}"
        session = text if as_id else "s1"
        turn_id = other if as_id else None
        given_turns = [Turn(speaker, text, id=turn_id), Turn("bob", other)]
        stored = _outcome(lambda: mem.append(given_turns, user_id=user, session_id=session))
        if _ok(stored):
            runs["accepted"] += 1
            assert not any(_has_surrogate(s) for s in (user, session, speaker, text, other))
            back = mem.turns(user_id=user, session_id=session)
            assert [(t.speaker, t.text) for t in back] == [(speaker.strip(), text),
                                                           ("bob", other)]
            if turn_id is not None:
                assert back[0].id == turn_id
            assert _ok(_outcome(lambda: mem.end_session(user_id=user, session_id=session)))
        else:
            runs["rejected: " + " ".join(str(stored).split()[:3])] += 1
            assert isinstance(stored, InvalidInputError)
            left = _outcome(lambda: mem.turns(user_id=user))
            assert left == [] or isinstance(left, InvalidInputError)
        _outcome(lambda: mem.add_session([Turn("ann", other), Turn("bob", text)], user_id=user))
        result = _outcome(lambda: mem.search(text, user_id=user, k=3, explore=True))
        if _ok(result) and result.hits:
            runs["searches with hits"] += 1
            assert _ok(_outcome(lambda: mem.feedback(result, cited=[result.hits[0].memory.id])))
        _outcome(lambda: mem.search(other, user_id=user, follow_links=True))
        _outcome(lambda: mem.memories(user_id=user))
        _outcome(lambda: mem.rerank_texts(text, [other, text], user_id=user))
        _outcome(lambda: mem.recall(other, user_id=user, previous_turn=text))
        if runs["inputs"] % 10 == 1:
            runs["async rounds"] += 1
            _outcome(lambda: asyncio.run(_async_twins(mem, text, other)))
        if _ok(_outcome(lambda: mem.forget(user_id=user))):
            assert mem.turns(user_id=user) == []
            assert mem.memories(user_id=user) == []

    drive()
    print(f"\nunicode suite: {dict(runs)}; words drawn per kind: {dict(SEEN)}")
    assert set(SEEN) == set(ALPHABETS)
    assert runs["accepted"]
    assert runs["searches with hits"]
    assert runs["async rounds"]


async def _async_twins(mem: ReflectiveMemory, text: str, other: str) -> None:
    await mem.aappend(Turn("ann", text), user_id="async", session_id="a")
    await mem.aend_session(user_id="async", session_id="a")
    await mem.aadd_session([Turn("ann", other)], user_id="async")
    await mem.asearch(other, user_id="async")
    await mem.aturns(user_id="async")
    await mem.amemories(user_id="async")
    await mem.aforget(user_id="async")
