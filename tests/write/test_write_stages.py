"""The LLM-free write-path stages every user runs by default, each on its own:
`EmbeddingSegmenter` (real embedder), `SegmentExtractor`, `FillerCompressor`,
`ThresholdReconciler`, `build_pipeline`, and `Reflector` over a real SQLite store.
`test_build_pipeline_with_an_llm_*` passes a scripted fake LLM (a plain callable) that is
never called; nothing else uses an LLM."""

from datetime import datetime, timezone

import numpy as np
import pytest

from rmm_core.config import MemoryConfig
from rmm_core.errors import InvalidInputError, ReflectionError
from rmm_core.models.llm import MeteredLLM
from rmm_core.storage import open_store
from rmm_core.types import Memory, Turn
from rmm_core.write.compress import FillerCompressor, IdentityCompressor
from rmm_core.write.extract import LLMExtractor, SegmentExtractor
from rmm_core.write.pipeline import build_pipeline
from rmm_core.write.reconcile import Decision, LLMReconciler, ThresholdReconciler
from rmm_core.write.reflect import Reflector
from rmm_core.write.segment import EmbeddingSegmenter, FixedSegmenter, LLMSegmenter
from rmm_core.write.session import Draft, SessionInput

TWO_TOPICS = [
    "I baked sourdough bread this morning.", "Did the crust come out crispy?",
    "Yes, I used a hot dutch oven and a long proof.", "I should try rye flour in my next loaf.",
    "Did you watch the football match last night?", "Yes, Arsenal scored twice in the second half.",
    "Their striker was brilliant against Chelsea.", "I hope they win the league this season.",
]
TURNS = [Turn("Ana" if i % 2 == 0 else "Ben", text, id=f"t{i}")
         for i, text in enumerate(TWO_TOPICS)]


def session(embedder=None, turns=TURNS, started_at=None):
    vectors = embedder.embed([t.render() for t in turns]) if embedder else None
    return SessionInput("u1", "s1", list(turns), started_at, vectors)


# segment --------------------------------------------------------------------------------------
def test_embedding_segmenter_cuts_where_the_topic_changes(embedder):
    assert EmbeddingSegmenter().segment(session(embedder)) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_embedding_segmenter_keeps_segments_within_max_turns_and_covers_each_turn_once(
        embedder):
    segments = EmbeddingSegmenter(max_turns=3).segment(session(embedder))
    assert [p for s in segments for p in s] == list(range(len(TURNS)))
    assert all(1 <= len(s) <= 3 for s in segments)


def test_embedding_segmenter_without_vectors_or_with_few_turns_uses_fixed_windows(embedder):
    assert EmbeddingSegmenter(max_turns=5).segment(session()) == [[0, 1, 2, 3, 4], [5, 6, 7]]
    assert EmbeddingSegmenter().segment(session(embedder, TURNS[:2])) == [[0, 1]]
    assert FixedSegmenter(3).segment(session()) == [[0, 1, 2], [3, 4, 5], [6, 7]]
    with pytest.raises(ValueError, match="min_turns"):
        EmbeddingSegmenter(min_turns=5, max_turns=4)


# extract --------------------------------------------------------------------------------------
def test_segment_extractor_makes_one_verbatim_memory_per_segment():
    start = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    turns = [*TURNS[:3], Turn("Ana", "The same id again, a second passage.", id="t2")]
    drafts = SegmentExtractor().extract(session(turns=turns, started_at=start), [[0, 1], [2, 3]])
    assert [d.text for d in drafts] == [
        "Ana: I baked sourdough bread this morning.\nBen: Did the crust come out crispy?",
        "Ana: Yes, I used a hot dutch oven and a long proof.\n"
        "Ana: The same id again, a second passage."]
    assert [d.refs for d in drafts] == [["t0", "t1"], ["t2"]]  # ids once, in order
    assert [d.speakers for d in drafts] == [["Ana", "Ben"], ["Ana"]]
    assert [d.positions for d in drafts] == [[0, 1], [2, 3]]
    assert all(d.occurred_at == start and d.attrs == {"source": "segment"} for d in drafts)


# compress -------------------------------------------------------------------------------------
def test_filler_compressor_keeps_names_numbers_and_dates_only():
    keys = FillerCompressor().compress([
        "Oh yeah, I really went to Lisbon with Mia on 12 May 2023, haha!", "ok thanks lol"])
    assert keys == ["Lisbon Mia 12 May 2023", ""]
    assert IdentityCompressor().compress(["Oh yeah"]) == ["Oh yeah"]


# reconcile ------------------------------------------------------------------------------------
def memory(mid: str, text: str, speakers=("Ana",)) -> Memory:
    return Memory(id=mid, user_id="u1", text=text, key=text, refs=[], speakers=list(speakers))


def draft(text: str, speakers=("Ana",)) -> Draft:
    return Draft(text=text, refs=["x"], speakers=list(speakers))


def test_threshold_reconciler_merges_near_duplicates_of_the_same_speaker_only():
    stored = memory("m1", "Ana: I adopted a cat.")
    drafts = [draft("Ana: I adopted a cat!"), draft("Ben: I adopted a cat!", ["Ben"]),
              draft("Ana: I like tea."), draft("Ana: My cat is called Miso.")]
    near = [[(stored, 0.95)], [(stored, 0.99)], [(stored, 0.5)], [(stored, 0.93)]]
    decisions = ThresholdReconciler(0.92).reconcile(drafts, near)
    merged = "Ana: I adopted a cat.\nAna: I adopted a cat!\nAna: My cat is called Miso."
    assert decisions == [Decision(0, "m1", merged), Decision(1), Decision(2),
                         Decision(3, "m1", merged)]  # both merges end with the full text


def test_threshold_reconciler_adds_when_the_merge_would_pass_max_words():
    stored = memory("m1", "Ana: one two three")
    assert ThresholdReconciler(0.9, max_words=6).reconcile(
        [draft("Ana: four five six")], [[(stored, 0.99)]]) == [Decision(0)]


# build_pipeline -------------------------------------------------------------------------------
def test_build_pipeline_without_an_llm_is_llm_free():
    pipe = build_pipeline(MemoryConfig())
    assert isinstance(pipe.segmenter, EmbeddingSegmenter)
    assert isinstance(pipe.extractor, SegmentExtractor)
    assert isinstance(pipe.compressor, FillerCompressor)
    assert isinstance(pipe.reconciler, ThresholdReconciler)
    assert pipe.reconciler.threshold == MemoryConfig().stages.merge_threshold
    fixed = build_pipeline(MemoryConfig(segmentation={"kind": "fixed"},
                                        stages={"compression": "identity"}))
    assert isinstance(fixed.segmenter, FixedSegmenter)
    assert isinstance(fixed.compressor, IdentityCompressor)


def test_build_pipeline_with_an_llm_uses_the_papers_stages_metered():
    pipe = build_pipeline(MemoryConfig(), lambda prompt: "unused")
    assert isinstance(pipe.segmenter, LLMSegmenter)
    assert isinstance(pipe.extractor, LLMExtractor)
    assert isinstance(pipe.reconciler, LLMReconciler)
    assert isinstance(pipe.extractor.llm, MeteredLLM)
    mixed = build_pipeline(MemoryConfig(segmentation={"kind": "embedding"}),
                           lambda prompt: "unused")
    assert isinstance(mixed.segmenter, EmbeddingSegmenter)


def test_build_pipeline_rejects_unknown_stages_and_llm_stages_without_an_llm():
    with pytest.raises(ValueError, match="'embedding', 'fixed', 'llm' or 'incremental'"):
        build_pipeline(MemoryConfig(segmentation={"kind": "texttiling"}))
    with pytest.raises(InvalidInputError, match="stages.extraction=\"llm\" needs an LLM"):
        build_pipeline(MemoryConfig(stages={"extraction": "llm"}))


# reflect --------------------------------------------------------------------------------------
@pytest.fixture
def store(tmp_path):
    store = open_store(str(tmp_path / "m.sqlite"))
    yield store
    store.close()


def ended_session(store):
    store.append_turns("u1", "s1", TURNS, None, 0.0)
    store.mark_ended("u1", "s1")
    return store.session("u1", "s1")


def test_reflector_commits_each_turn_into_memories_exactly_once(store, embedder):
    reflector = Reflector(store, embedder, build_pipeline(MemoryConfig()), lambda user: [])
    state = ended_session(store)
    memories = reflector.reflect(state)
    assert sorted(r for m in memories for r in m.refs) == [t.id for t in TURNS]
    assert [m.refs for m in memories] == [["t0", "t1", "t2", "t3"], ["t4", "t5", "t6", "t7"]]
    assert all(m.key and m.key != m.text for m in memories)  # filler-compressed keys
    assert store.session("u1", "s1").reflected == len(TURNS)
    vectors = store.memory_vectors("u1", [m.id for m in memories])
    assert all(np.isfinite(v).all() and len(v) == 5 for v in vectors.values())  # text + 4 turns
    assert reflector.reflect(state) == []  # the same state again: already committed


def test_reflector_records_a_failing_stage_and_keeps_the_turns(store, embedder):
    class Broken:
        def segment(self, session):
            raise RuntimeError("segmenter exploded")

    pipe = build_pipeline(MemoryConfig())
    pipe.segmenter = Broken()
    reflector = Reflector(store, embedder, pipe, lambda user: [], retry_delay=30.0)
    with pytest.raises(ReflectionError, match="segmenter exploded"):
        reflector.reflect(ended_session(store))
    after = store.session("u1", "s1")
    assert after.failures == 1
    assert after.reflected == 0
    assert "segmenter exploded" in after.last_error
    assert after.retry_at is not None
    assert store.memories("u1") == []
    assert len(store.turns("u1", "s1")) == len(TURNS)
