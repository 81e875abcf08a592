"""LLM write-path stages: parsing, repair, fallback, usage, merge provenance.

Every test here uses `rmm_core.testing.ScriptedLLM`, which answers each task (named by its
prompt template) from a script (no model); the real-model test is
tests/models/test_llm_real.py. Memory-level tests use the real packaged embedder.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from rmm_core import ReflectiveMemory
from rmm_core.errors import InvalidInputError, LLMError, LLMFallbackWarning
from rmm_core.models.llm import MeteredLLM, OpenAICompatibleLLM, as_llm, start_usage
from rmm_core.models.parse import ParseError, load_json
from rmm_core.testing import ScriptedLLM
from rmm_core.types import Turn
from rmm_core.write.compress import LLMLinguaCompressor
from rmm_core.write.extract import parse_topics
from rmm_core.write.reconcile import Action, parse_actions
from rmm_core.write.segment import IncrementalLLMSegmenter, parse_segments
from rmm_core.write.session import SessionInput

SESSION_1 = [
    Turn("Ann", "I adopted a beagle called Rex yesterday!", "s1:0"),
    Turn("Bob", "Congrats! How is he settling in?", "s1:1"),
    Turn("Ann", "Great, he loves the park near my flat.", "s1:2"),
    Turn("Bob", "By the way, I start my new nursing job next week.", "s1:3"),
]
SESSION_2 = [
    Turn("Ann", "Rex learned to sit, my beagle is so smart.", "s2:0"),
    Turn("Bob", "Nice. The nursing job is tiring but I like it.", "s2:1"),
]
EXTRACT_1 = json.dumps({
    "Ann": [{"summary": "Ann adopted a beagle named Rex on 7 May 2023; he loves the park.",
             "reference": [0, 2]}],
    "Bob": [{"summary": "Bob starts a nursing job in the week of 15 May 2023.",
             "reference": [3]}]})
EXTRACT_2 = json.dumps({
    "Ann": [{"summary": "Ann's beagle Rex learned to sit.", "reference": [0]}],
    "Bob": "NO_TRAIT"})


def _open(tmp_path, embedder, llm, **settings) -> ReflectiveMemory:
    return ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder, llm=llm,
                                 **settings)


# parsing ------------------------------------------------------------------------------------
@pytest.mark.parametrize("answer, expected", [
    ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
    ('Sure! Here it is: [{"start": 0, "end": 3}] Hope that helps {"x": 1}',
     [{"start": 0, "end": 3}]),
    ("{'a': 1,}", {"a": 1}),
])
def test_load_json_tolerates_fences_prose_and_syntax(answer, expected):
    assert load_json(answer)[0] == expected


@pytest.mark.parametrize("answer", ["", "   ", "no json here", "{]"])
def test_load_json_rejects_unusable_answers(answer):
    with pytest.raises(ParseError):
        load_json(answer)


def test_topics_drop_unknown_turns_and_truncated_tail():
    answer = ('{"ann": [{"summary": "Ann has a dog.", "reference": [0, 9, "x", "2"]}, '
              '{"summary": "Ann likes tea and', )[0]
    topics = parse_topics(answer, ["Ann", "Bob"], n=4)
    assert topics == [("Ann", "Ann has a dog.", [0, 2])]
    unnamed = parse_topics('{"Bob": [{"summary": "I run.", "reference": [1]}]}', ["Ann", "Bob"], 4)
    assert unnamed == [("Bob", "Bob: I run.", [1])]


def test_topics_no_trait_and_wrong_keys():
    assert parse_topics("NO_TRAIT", ["Ann", "Bob"], 4) == []
    assert parse_topics('{"Ann": "NO_TRAIT", "Bob": "NO_TRAIT"}', ["Ann", "Bob"], 4) == []
    with pytest.raises(ParseError, match="speaker names"):
        parse_topics('{"user": []}', ["Ann", "Bob"], 4)


def test_actions_lines_and_range_checks():
    answer = ("Here you go:\nN1: Add()\nN2: Merge(1, Ann has two dogs, Rex and Max.)\n"
              "N3: Merge(0, cut")
    assert parse_actions(answer, 3, 2) == {0: None, 1: Action("merge", 1, "Ann has two dogs, "
                                                                   "Rex and Max.")}
    assert parse_actions("N1: Update(0, Ann lives in Porto now, not Lisbon (since May).)",
                         1, 1) == {0: Action("update", 0, "Ann lives in Porto now, not Lisbon "
                                                          "(since May).")}
    with pytest.raises(ParseError, match="no stored memory"):
        parse_actions("N1: Merge(5, x)", 1, 2)
    with pytest.raises(ParseError, match="not a new memory"):
        parse_actions("N4: Add()", 2, 2)
    # a merge into a memory not listed under it becomes an Add
    assert parse_actions("N1: Merge(1, Ann and Bob both run.)", 1, 2, allowed=[{0}]) == {0: None}
    with pytest.raises(ParseError, match="no action lines"):
        parse_actions("I think they are all new.", 2, 2)


def test_segments_cover_every_turn_once_and_reject_out_of_range():
    assert parse_segments('[{"start": 0, "end": 1}, {"start": 3, "end": 5}]', 6) == \
        [[0, 1], [2], [3, 4, 5]]
    assert parse_segments("[[0, 2], [3, 3]]", 4) == [[0, 1, 2], [3]]
    with pytest.raises(ParseError, match="outside"):
        parse_segments('[{"start": 0, "end": 9}]', 4)


# the pipeline with an LLM --------------------------------------------------------------------
def test_an_llm_update_adds_the_new_summary_and_supersedes_the_stored_memory(tmp_path,
                                                                            embedder):
    summary = "Ann now keeps her beagle Rex at her parents' farm, no longer in her flat."
    llm = ScriptedLLM(
        segment=['[{"start": 0, "end": 3}]'],
        extract=[EXTRACT_1, json.dumps({"Ann": [{"summary": "Rex went to the farm.",
                                                  "reference": [0]}], "Bob": "NO_TRAIT"})],
        reconcile=[f"N1: Update(0, {summary})"])
    mem = _open(tmp_path, embedder, llm)
    first = mem.add_session(SESSION_1, user_id="u", session_id="s1",
                            started_at=datetime(2023, 5, 8))
    rex = next(m for m in first if "Rex" in m.text)
    (new,) = mem.add_session(SESSION_2, user_id="u", session_id="s2",
                             started_at=datetime(2023, 6, 1))
    assert "Update(<stored number>" in llm.calls[-1].prompt
    assert new.text == summary
    assert new.supersedes == [rex.id]
    old = mem.get(rex.id, user_id="u")
    assert old.superseded_by == new.id
    assert old.changed_to == summary
    assert old.valid_to == datetime(2023, 6, 1)
    assert [v.reason for v in old.versions] == ["created", "superseded"]
    assert mem.search("Where is Rex?", user_id="u", k=2)[0].memory.id == new.id


def test_llm_pipeline_extracts_merges_and_counts(tmp_path, embedder):
    llm = ScriptedLLM(
        segment=['[{"start": 0, "end": 2}, {"start": 3, "end": 3}]'],
        extract=[EXTRACT_1, EXTRACT_2],
        reconcile=[lambda p: "N1: Merge(0, Ann adopted a beagle named Rex on 7 May 2023; "
                             "he loves the park and has learned to sit.)"
                   if "[0] Ann adopted" in p else "N1: Merge(1, Ann's dog Rex can sit.)"])
    mem = _open(tmp_path, embedder, llm)
    first = mem.add_session(SESSION_1, user_id="u", session_id="s1",
                            started_at=datetime(2023, 5, 8))
    assert sorted(m.text for m in first) == sorted(
        t["summary"] for v in json.loads(EXTRACT_1).values() for t in v)
    assert "08 May 2023 (Monday)" in llm.calls[1].prompt
    assert llm.tasks() == ["segment", "extract"]  # nothing stored yet: no reconcile call
    second = mem.add_session(SESSION_2, user_id="u", session_id="s2")
    assert llm.tasks()[2:] == ["extract", "reconcile"]  # 2 turns: one segment, no call
    memories = {m.id: m for m in mem.memories(user_id="u")}
    assert len(memories) == 2  # the repeated fact was merged, not duplicated
    (merged,) = second
    rex = memories[merged.id]
    assert "learned to sit" in rex.text
    assert rex.refs == ["s1:0", "s1:2", "s2:0"]  # both provenances
    assert [v.reason for v in rex.versions] == ["created", "merged"]
    assert rex.versions[0].text.startswith("Ann adopted a beagle")  # earlier version kept
    usage = mem.usage(user_id="u")
    assert usage["sessions"] == 2
    assert usage["calls"] == 4
    assert usage["failures"] == 0
    assert usage["prompt_tokens"] > 100
    assert usage["completion_tokens"] > 10
    mem.close()


def test_calls_per_session_stay_at_three_whatever_the_memory_count(tmp_path, embedder):
    many = {"Ann": [{"summary": f"Ann fact number {i}.", "reference": [i % 4]}
                    for i in range(12)], "Bob": "NO_TRAIT"}
    llm = ScriptedLLM(segment=["[[0, 3]]"], extract=[json.dumps(many)],
                      reconcile=["\n".join(f"N{i}: Add()" for i in range(1, 13))])
    mem = _open(tmp_path, embedder, llm)
    for s in range(3):
        turns = [Turn(t.speaker, t.text, f"x{s}:{i}") for i, t in enumerate(SESSION_1)]
        mem.add_session(turns, user_id="u", session_id=f"x{s}")
    usage = mem.usage(user_id="u")
    assert len(mem.memories(user_id="u")) == 36
    assert usage["calls"] <= 3 * usage["sessions"]
    assert usage["sessions"] == 3
    mem.close()


def test_one_repair_then_llm_result(tmp_path, embedder):
    llm = ScriptedLLM(segment=["[[0, 3]]"], extract=["Sorry, I cannot do that."],
                      repair=[EXTRACT_1])
    mem = _open(tmp_path, embedder, llm)
    out = mem.add_session(SESSION_1, user_id="u", session_id="s1")
    assert llm.tasks() == ["segment", "extract", "repair"]
    assert "holds no JSON" in llm.calls[2].prompt
    assert {m.attrs.get("source") for m in out} == {"llm"}
    mem.close()


@pytest.mark.parametrize("failure", [
    "still not json", RuntimeError("server down"), "",
])
def test_failed_llm_falls_back_without_losing_turns(tmp_path, embedder, failure):
    llm = ScriptedLLM(segment=[failure], extract=[failure], repair=[failure],
                      reconcile=[failure])
    mem = _open(tmp_path, embedder, llm)
    with pytest.warns(LLMFallbackWarning, match="LLM-free extraction"):
        out = mem.add_session(SESSION_1, user_id="u", session_id="s1")
    assert {m.attrs.get("source") for m in out} == {"segment"}
    assert sorted(r for m in out for r in m.refs) == [t.id for t in SESSION_1]
    assert mem.usage(user_id="u")["failures"] >= 2
    mem.close()


def test_timeout_falls_back(tmp_path, embedder):
    def slow(prompt: str) -> str:
        time.sleep(2)
        return EXTRACT_1

    mem = _open(tmp_path, embedder, slow, stages={"llm_timeout": 0.2,
                                                  "reconciliation": "threshold"},
                segmentation={"kind": "embedding"})
    with pytest.warns(LLMFallbackWarning, match="did not answer within 0.2 s"):
        out = mem.add_session(SESSION_1, user_id="u", session_id="s1")
    start = time.perf_counter()
    with pytest.raises(LLMError, match="within 0.2 s"):
        MeteredLLM(as_llm(slow), timeout=0.2).complete("x")
    assert time.perf_counter() - start < 1.0
    assert out
    assert mem.usage(user_id="u") == {"sessions": 1, "calls": 1, "failures": 1,
                                              "prompt_tokens": mem.usage()["prompt_tokens"],
                                              "completion_tokens": 0}
    mem.close()


def test_incremental_segmenter_asks_per_turn():
    llm = ScriptedLLM(continues=["Yes.", "no", "YES, same topic"])
    segmenter = IncrementalLLMSegmenter(MeteredLLM(llm))
    segments = segmenter.segment(SessionInput("u", "s", SESSION_1))
    assert segments == [[0, 1], [2, 3]]
    assert len(llm.calls) == 3


# LLM objects ----------------------------------------------------------------------------------
class _AsyncOnly:
    async def acomplete(self, prompt: str) -> str:
        return prompt.upper()


def test_as_llm_accepts_callables_objects_and_async_only():
    assert MeteredLLM(as_llm(lambda p: p + "!")).complete("hi") == "hi!"
    assert MeteredLLM(as_llm(_AsyncOnly())).complete("hi") == "HI"
    with pytest.raises(InvalidInputError, match="complete"):
        as_llm(42)
    class Broken:
        def complete(self, prompt: str) -> int:
            return 7

    metered = MeteredLLM(as_llm(Broken()))
    with pytest.raises(LLMError, match="returned int"):
        metered.complete("x")
    assert metered.totals["failures"] == 1


def test_openai_compatible_client_reports_server_token_counts():
    seen = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            seen["body"] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            reply = json.dumps({"choices": [{"message": {"content": "hello"}}],
                                "usage": {"prompt_tokens": 11, "completion_tokens": 2}})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(reply.encode())

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        llm = MeteredLLM(OpenAICompatibleLLM(f"http://127.0.0.1:{server.server_port}/v1",
                                             "qwen", max_tokens=32))
        tally = start_usage("s")
        assert llm.complete("Say hello") == "hello"
        assert tally == {"calls": 1, "prompt_tokens": 11, "completion_tokens": 2, "failures": 0}
        assert seen["body"]["messages"] == [{"role": "user", "content": "Say hello"}]
        assert seen["body"]["max_tokens"] == 32
    finally:
        server.shutdown()
    with pytest.raises(LLMError, match="127.0.0.1"):
        OpenAICompatibleLLM(f"http://127.0.0.1:{server.server_port}/v1", timeout=1).complete("x")


# settings ------------------------------------------------------------------------------------
def test_stage_settings_are_validated(tmp_path, embedder):
    with pytest.raises(ValueError, match="'embedding', 'fixed', 'llm' or 'incremental'"):
        _open(tmp_path, embedder, None, segmentation={"kind": "magic"})
    with pytest.raises(InvalidInputError, match="needs an LLM"):
        _open(tmp_path, embedder, None, stages={"extraction": "llm"})
    with pytest.raises(InvalidInputError, match="llmlingua_model_path"):
        _open(tmp_path, embedder, None, stages={"compression": "llmlingua"})


def test_mixed_pipeline_uses_llm_only_where_asked(tmp_path, embedder):
    llm = ScriptedLLM(extract=[EXTRACT_1])
    mem = _open(tmp_path, embedder, llm, segmentation={"kind": "embedding"},
                stages={"reconciliation": "threshold"})
    mem.add_session(SESSION_1, user_id="u", session_id="s1")
    assert llm.tasks() == ["extract"]
    mem.close()


# LLMLingua-2 ----------------------------------------------------------------------------------
def test_llmlingua_needs_a_model_folder(tmp_path):
    with pytest.raises(InvalidInputError, match="config.json"):
        LLMLinguaCompressor(tmp_path / "nowhere")
    (tmp_path / "my-model").mkdir()
    (tmp_path / "my-model" / "config.json").write_text("{}")
    with pytest.raises(InvalidInputError, match="xlm-roberta-large"):
        LLMLinguaCompressor(tmp_path / "my-model")


def test_llmlingua_runs_offline_on_a_tiny_local_model(tmp_path):
    """Wiring only: a randomly initialised 1-layer BERT token classifier (built here, with
    the packaged MiniLM's tokenizer) stands in for the real LLMLingua-2 weights."""
    pytest.importorskip("llmlingua")
    torch = pytest.importorskip("torch")
    from transformers import AutoTokenizer, BertConfig, BertForTokenClassification

    from rmm_core.models.embed import packaged_minilm_path

    folder = tmp_path / "tiny-bert-base-multilingual-cased"
    tokenizer = AutoTokenizer.from_pretrained(packaged_minilm_path())
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    BertForTokenClassification(BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=64, num_labels=2,
        architectures=["BertForTokenClassification"])).save_pretrained(folder)
    texts = ["Caroline went to the LGBTQ support group on 7 May 2023 and felt accepted.",
             "Melanie paints sunsets with her kids at the lake every summer."]
    out = LLMLinguaCompressor(folder, rate=0.5).compress(texts)
    assert len(out) == 2
    for text, short in zip(texts, out):
        kept = re.findall(r"\w+", short.lower())
        assert 0 < len(kept) < len(text.split())
        assert set(kept) <= set(re.findall(r"\w+", text.lower())), short  # drops, never invents


# hostile answers and the one metered path ------------------------------------------------------
@pytest.mark.parametrize("depth", [500, 1000, 5000])
def test_deeply_nested_brackets_are_a_parse_error(depth):
    for answer in ("[" * depth, "{\"a\": " + "[" * depth):
        with pytest.raises(ParseError):
            load_json(answer)


def test_no_trait_inside_a_list_is_no_memory():
    answer = json.dumps({"Ann": ["NO_TRAIT"],
                         "Bob": [{"summary": "NO_TRAIT", "reference": [1]},
                                 {"summary": "Bob starts a nursing job.", "reference": [3]}]})
    assert parse_topics(answer, ["Ann", "Bob"], 4) == [
        ("Bob", "Bob starts a nursing job.", [3])]


def test_timed_out_calls_keep_a_bounded_number_of_threads():
    release = threading.Event()
    metered = MeteredLLM(as_llm(lambda p: release.wait(30) and "late"), timeout=0.05,
                         workers=3)
    baseline = threading.active_count()
    for _ in range(40):
        with pytest.raises(LLMError):
            metered.complete("x")
    assert threading.active_count() - baseline == 3
    assert metered.totals["calls"] == 3
    assert metered.totals["failures"] == 40
    release.set()  # the stuck calls return: their workers serve new calls again
    deadline = time.time() + 5
    while True:
        try:
            assert metered.complete("x") == "late"
            break
        except LLMError:
            assert time.time() < deadline
            time.sleep(0.05)
    assert threading.active_count() - baseline == 3


def test_an_async_only_llm_is_cancelled_on_timeout():
    events = []

    class Slow:
        async def acomplete(self, prompt: str) -> str:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                events.append("cancelled")
                raise
            return "late"

    metered = MeteredLLM(Slow(), timeout=0.05)
    baseline = threading.active_count()
    for _ in range(10):
        with pytest.raises(LLMError, match="within 0.05 s"):
            metered.complete("x")
    time.sleep(0.2)
    assert events == ["cancelled"] * 10
    assert threading.active_count() - baseline <= 1


def test_an_llm_raising_its_own_timeout_error_is_a_failed_call():
    def refuse(prompt: str) -> str:
        raise TimeoutError("upstream gateway timeout")

    with pytest.raises(LLMError, match="TimeoutError: upstream gateway timeout"):
        MeteredLLM(as_llm(refuse), timeout=5).complete("x")


def test_respond_counts_its_llm_call_and_types_a_failure(tmp_path, embedder):
    llm = ScriptedLLM(extract=[EXTRACT_1], cite=["Ann adopted Rex [1]."])
    mem = _open(tmp_path, embedder, llm, segmentation={"kind": "embedding"},
                stages={"reconciliation": "threshold"})
    mem.add_session(SESSION_1, user_id="u", session_id="s1")
    before = mem.usage(user_id="u")
    assert mem.respond("Who is Rex?", user_id="u").cited
    after = mem.usage(user_id="u")
    assert after["calls"] == before["calls"] + 1
    assert after["sessions"] == before["sessions"]
    llm.script("cite", ConnectionError("connection reset"))
    with pytest.raises(LLMError, match="ConnectionError: connection reset"):
        mem.respond("Who is Rex?", user_id="u")
    mem.close()


# LLM memories fit a hit (max_hit_words) and cite only turns they carry -----------------------
def test_long_llm_summary_becomes_memories_that_fit_a_hit(tmp_path, embedder):
    sentence = "Ann adopted a beagle named Rex who loves long walks in the park near her flat."
    summary = " ".join([sentence] * 12)  # 12 x 16 = 192 words
    llm = ScriptedLLM(segment=['[{"start": 0, "end": 3}]'],
                      extract=[json.dumps({"Ann": [{"summary": summary, "reference": [0, 2]}],
                                           "Bob": "NO_TRAIT"})])
    mem = _open(tmp_path, embedder, llm, search={"max_hit_words": 60})
    memories = mem.add_session(SESSION_1, user_id="u", session_id="s1",
                               started_at=datetime(2023, 5, 8))
    assert "most 57 words" in llm.calls[1].prompt
    assert len(memories) == 4
    assert all(len(m.text.split()) <= 57 for m in memories)
    assert " ".join(m.text for m in memories) == summary  # split at sentences, nothing lost
    assert all(m.refs == ["s1:0", "s1:2"] for m in memories)
    hits = mem.search("Rex the beagle", user_id="u", k=4)
    assert all(len(h.text.split()) <= 60 for h in hits)
    mem.close()


def test_llm_memory_refers_only_to_cited_turns_it_carries(tmp_path, embedder):
    extract = json.dumps({"Ann": [{"summary": "Ann adopted a beagle named Rex.",
                                   "reference": [0, 1, 3]}], "Bob": "NO_TRAIT"})
    llm = ScriptedLLM(segment=['[{"start": 0, "end": 3}]'], extract=[extract])
    mem = _open(tmp_path, embedder, llm)
    (memory,) = mem.add_session(SESSION_1, user_id="u", session_id="s1")
    assert memory.refs == ["s1:0"]  # turns 1 and 3 share no content word with it
    mem.close()


def test_llm_merge_too_long_for_a_hit_adds_instead(tmp_path, embedder):
    long_merge = " ".join(["Ann's beagle Rex loves the park and learned to sit."] * 8)
    llm = ScriptedLLM(segment=['[{"start": 0, "end": 2}, {"start": 3, "end": 3}]'],
                      extract=[EXTRACT_1, EXTRACT_2],
                      reconcile=[f"N1: Merge(0, {long_merge})"])
    mem = _open(tmp_path, embedder, llm, search={"max_hit_words": 40})
    mem.add_session(SESSION_1, user_id="u", session_id="s1")
    (added,) = mem.add_session(SESSION_2, user_id="u", session_id="s2")
    assert "most 37 words" in llm.calls[-1].prompt
    assert added.text == "Ann's beagle Rex learned to sit."
    assert added.refs == ["s2:0"]
    assert len(mem.memories(user_id="u")) == 3  # nothing merged, nothing lost
    assert all(len(m.text.split()) <= 37 for m in mem.memories(user_id="u"))
    mem.close()


def test_the_llm_decides_what_changed_among_the_stored_memories_it_saw(tmp_path, embedder):
    """With an LLM reconciling, the rules only propose: a move they are sure of is not
    recorded against a stored memory the LLM saw and answered Add for (it read no change),
    and no call is added for it (still one reconciliation call per session)."""
    llm = ScriptedLLM(
        segment=['[{"start": 0, "end": 0}]', '[{"start": 0, "end": 0}]'],
        extract=[json.dumps({"user": [{"summary": "I live in Leeds, near the park.",
                                       "reference": [0]}]}),
                 json.dumps({"user": [{"summary": "We moved from Leeds to York in May.",
                                       "reference": [0]}]})],
        reconcile=["N1: Add()"])
    mem = _open(tmp_path, embedder, llm)
    (leeds,) = mem.add_session([{"speaker": "user", "text": "I live in Leeds, near the park."}],
                               user_id="u", session_id="s1", started_at=datetime(2023, 5, 8))
    mem.add_session([{"speaker": "user", "text": "We moved from Leeds to York in May."}],
                    user_id="u", session_id="s2", started_at=datetime(2023, 6, 1))
    assert [c.task for c in llm.calls].count("reconcile") == 1
    assert "judge_changes" not in [c.task for c in llm.calls]
    assert mem.get(leeds.id, user_id="u").current
    without_llm = ReflectiveMemory.open(str(tmp_path / "rules.sqlite"), embedder=embedder)
    (leeds,) = without_llm.add("I live in Leeds, near the park.", user_id="u",
                               occurred_at="2023-05-08")
    without_llm.add("We moved from Leeds to York in May.", user_id="u", occurred_at="2023-06-01")
    assert not without_llm.get(leeds.id, user_id="u").current  # the rules alone: a move
    without_llm.close()
    mem.close()
