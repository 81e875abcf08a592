"""The feature reranker and the `reranker` setting: "none" changes and learns nothing, zero
weights are the hand-set order, a REINFORCE step raises a cited memory's features, weights
persist, the shipped file loads and a fresh install starts from it.

Unit tests of the maths use hand-made candidates (random vectors); the front-door tests use
the real embedder and real SQLite files.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from test_rerank import TOPICS

from rmm_core import InvalidInputError, ReflectiveMemory
from rmm_core.errors import StorageError
from rmm_core.learn.rerank import FEATURES, FeatureWeights, WeightStore
from rmm_core.learn.rerank_features import (
    SHIPPED,
    FeatureModel,
    FeatureScorer,
    load_weights,
    save_weights,
    shipped_weights,
)
from rmm_core.storage.sqlite import SQLiteStore
from rmm_core.types import Memory, MemoryHit

QUERIES = ["what pet do I have?", "where is the wedding?", "music lessons", "kitchen colour"]


def hits(texts: list[str], fused: list[float]) -> list[MemoryHit]:
    start = datetime(2024, 1, 1)
    return [MemoryHit(Memory(id=f"m{i}", user_id="u", text=t, key=t, refs=[f"t{i}"],
                             speakers=["user"], session_ids=[f"s{i}"],
                             occurred_at=start + timedelta(days=i)), f, t, i)
            for i, (t, f) in enumerate(zip(texts, fused))]


def candidates(seed: int = 0, k: int = 12, dim: int = 16):
    rng = np.random.default_rng(seed)
    query = rng.standard_normal(dim).astype(np.float32)
    vectors = [rng.standard_normal((int(rng.integers(1, 4)), dim)).astype(np.float32)
               for _ in range(k)]
    texts = [f"note {i} about the garden and the weather" for i in range(k)]
    texts[3] = "we moved here in 2019 with 3 cats"  # the one candidate holding the numbers
    return query, vectors, hits(texts, np.linspace(1.0, 0.5, k).tolist())


@pytest.fixture
def bank(tmp_path, embedder):
    def open_bank(**settings) -> ReflectiveMemory:
        mem = ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder, **settings)
        if not mem.memories(user_id="u1"):
            for i, text in enumerate(TOPICS):
                mem.add_session([{"speaker": "user", "text": text, "id": f"t{i}"}],
                                user_id="u1", session_id=f"s{i}")
        opened.append(mem)
        return mem

    opened: list[ReflectiveMemory] = []
    yield open_bank
    for mem in opened:
        mem.close()


def reranker_steps(mem: ReflectiveMemory) -> int:
    return sum(len(mem.store.state_log(n)[1])
               for n in ("reranker/global", "reranker-features/global"))


# the maths ------------------------------------------------------------------------------------
def test_zero_weights_keep_the_hand_set_order():
    query, vectors, cands = candidates()
    scorer = FeatureScorer(rng=np.random.default_rng(0))
    ranking = scorer.rank(FeatureWeights.zeros(), "when did we move, in 2019?", query, cands,
                          vectors, 5)
    assert ranking.order == list(range(len(cands)))
    assert ranking.features.shape == (len(cands), len(FEATURES))
    assert np.isfinite(ranking.features).all()


def test_dates_with_and_without_a_zone_rank_together():
    """A provisional turn's date may carry a zone while stored memories' do not (or the
    reverse); recency compares them as UTC instead of failing the search."""
    query, vectors, cands = candidates(k=4)
    aware = cands[0].memory.occurred_at.replace(tzinfo=timezone.utc)
    cands[0] = replace(cands[0], memory=replace(cands[0].memory, occurred_at=aware))
    ranking = FeatureScorer().rank(FeatureWeights.zeros(), "when?", query, cands, vectors, 2)
    assert np.allclose(ranking.features[:, FEATURES.index("recency")], [0, 1 / 3, 2 / 3, 1])


def test_a_feedback_step_raises_the_cited_memorys_feature_direction():
    """Seeded: the cited candidate is the only one holding the query's numbers; one step
    moves w towards its features, so its score rises relative to the others."""
    query, vectors, cands = candidates()
    scorer = FeatureScorer(rng=np.random.default_rng(0))
    question = "how many cats did we have in 2019?"
    numbers = FEATURES.index("numbers")
    weights = FeatureWeights.zeros()
    ranking = scorer.rank(weights, question, query, cands, vectors, 5)
    assert 3 in ranking.order[:5]
    assert ranking.features[:, numbers].tolist().count(1.0) == 1
    rewards = [1.0 if j == 3 else -1.0 for j in ranking.order[:5]]
    step = -0.1 * scorer.gradient(weights, ranking, rewards)
    assert step[numbers] > 0
    moved = FeatureWeights(weights.w + step)
    before, after = ranking.scores, scorer.scores(moved, ranking.features, ranking.fused)
    assert after[3] - np.delete(after, 3).max() > before[3] - np.delete(before, 3).max()


def test_feature_weights_roundtrip_and_corrupt_blob():
    w = FeatureWeights(np.arange(len(FEATURES), dtype=np.float32) / 7, 9)
    back = FeatureWeights.from_bytes(w.to_bytes())
    assert np.array_equal(back.w, w.w)
    assert back.steps == 9
    with pytest.raises(StorageError, match="unreadable"):
        FeatureWeights.from_bytes(w.to_bytes()[:-3])


def test_logged_feature_steps_fold_exactly_once_through_compaction(tmp_path):
    store = SQLiteStore(str(tmp_path / "w.sqlite"))
    name = "reranker-features/global"
    weights = WeightStore(store, model=FeatureModel(), compact_every=3, learning_rate=0.5)
    grads = np.ones(len(FEATURES), np.float32)
    for _ in range(7):
        weights.add(name, grads)
    final = WeightStore(store, model=FeatureModel()).load(name, len(FEATURES))
    np.testing.assert_allclose(final.w, -0.5 * 7 * grads)
    assert final.steps == 7
    store.close()


# the shipped weights ------------------------------------------------------------------------------
def test_the_shipped_weights_load_with_the_declared_features():
    data = json.loads(SHIPPED.read_text())
    assert data["features"] == list(FEATURES)
    weights = load_weights()
    assert weights.dim == len(FEATURES)
    assert weights.is_finite()
    assert weights.w.any()
    assert data["trained_on"]  # which conversations, for whoever checks on other data


def test_weights_files_are_checked(tmp_path):
    path = tmp_path / "w.json"
    save_weights(FeatureWeights(np.full(len(FEATURES), 0.25, np.float32), 3), path, {})
    assert np.allclose(load_weights(path).w, 0.25)
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "features": data["features"][::-1]}))
    with pytest.raises(InvalidInputError, match="name features"):
        load_weights(path)
    path.write_text(json.dumps({**data, "weights": [float("nan")] * len(FEATURES)}))
    with pytest.raises(InvalidInputError, match="not finite"):
        load_weights(path)
    with pytest.raises(InvalidInputError, match="cannot read"):
        load_weights(tmp_path / "missing.json")


@pytest.mark.parametrize("scope", ["global", "user"])
def test_a_fresh_install_starts_from_the_shipped_weights(bank, scope, embedder):
    mem = bank(reranker={"scope": scope})
    assert np.array_equal(mem.reranker.weights_for("new-user", embedder.dim).w,
                          shipped_weights().w)
    zero = bank(reranker={"scope": scope, "weights": None})
    assert not zero.reranker.weights_for("new-user", embedder.dim).w.any()


def test_own_weights_file_is_where_learning_starts(bank, tmp_path, embedder):
    path = tmp_path / "mine.json"
    save_weights(FeatureWeights(np.full(len(FEATURES), 0.5, np.float32)), path, {})
    mem = bank(reranker={"weights": str(path)})
    assert np.allclose(mem.reranker.weights_for("u1", embedder.dim).w, 0.5)
    res = mem.search("what pet do I have?", user_id="u1", k=2, explore=True)
    mem.feedback(res, cited=[res[0].memory.id])
    after = mem.reranker.weights_for("u1", embedder.dim)
    assert after.steps == 1
    assert not np.allclose(after.w, 0.5)


# the reranker setting -----------------------------------------------------------------------------
def test_unknown_reranker_is_refused_naming_the_choices(tmp_path, embedder):
    with pytest.raises(ValueError, match="'features', 'rmm' or 'none'"):
        ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=embedder,
                              reranker={"kind": "magic"})


def test_none_ranks_by_the_hand_set_fusion_and_learns_nothing(bank):
    mem = bank(reranker={"kind": "none"})
    for query in QUERIES:
        for explore in (False, True):
            res = mem.search(query, user_id="u1", k=3, explore=explore)
            assert [h.memory.id for h in res] == [h.memory.id for h in res.candidates[:3]]
            mem.feedback(res, cited=[res[0].memory.id])
            mem.feedback(res, cited=[])  # records nothing, so nothing is used up either
    assert reranker_steps(mem) == 0
    assert mem.reranker.weights is None


def test_features_with_zero_weights_rank_as_none(bank):
    plain, learner = bank(reranker={"kind": "none"}), bank(reranker={"weights": None})
    for query in QUERIES:
        assert [h.memory.id for h in plain.search(query, user_id="u1", k=4)] == \
            [h.memory.id for h in learner.search(query, user_id="u1", k=4)]


def test_feature_feedback_persists_and_reopens(bank, embedder):
    mem = bank(reranker={"weights": None})
    for query in QUERIES:
        res = mem.search(query, user_id="u1", k=3, explore=True)
        mem.feedback(res, cited=[res[-1].memory.id])
    learnt = mem.reranker.weights_for("u1", embedder.dim)
    mem.close()
    again = bank(reranker={"weights": None})
    reread = again.reranker.weights_for("u1", embedder.dim)
    assert reread.steps == len(QUERIES)
    assert np.array_equal(reread.w, learnt.w)
    assert learnt.w.any()


# the bench ----------------------------------------------------------------------------------------
def test_bench_rerank_runs_every_phase_and_saves_loadable_weights(tmp_path, capsys):
    """`rmm bench rerank` on the small JSONL test file (real embedder): every phase reports,
    the curves are drawn, and the weights it saves load and name their conversations."""
    pytest.importorskip("matplotlib")
    from pathlib import Path

    from rmm_core.cli import main

    data = Path(__file__).parents[1] / "data" / "conversations.jsonl"
    out, weights, plot = tmp_path / "f.json", tmp_path / "w.json", tmp_path / "c.png"
    assert main(["bench", "rerank", "--dataset", f"jsonl={data}", "--train", "jsonl=0",
                 "--test", "jsonl=1", "--json", str(out), "--save-weights", str(weights),
                 "--plot", str(plot), "--window", "2"]) == 0
    figures = json.loads(out.read_text())["families"]["jsonl"]
    assert {"none", "transfer", "shipped", "online"} <= set(figures)
    assert plot.stat().st_size > 0
    assert "feedback step: median" in capsys.readouterr().out
    saved = json.loads(weights.read_text())
    assert list(saved["trained_on"]) == ["jsonl"]
    assert str(tmp_path) not in saved["command"]
    assert load_weights(weights).dim == len(FEATURES)


def test_stop_words_are_the_shared_list():
    """Words of `text.STOP_WORDS` ("please", "tell", "just") are no overlap: a memory holding
    only them shares nothing with the query."""
    from rmm_core.learn.rerank_traits import QueryTraits, text_traits

    query = QueryTraits.of("Please just tell me about Rome")
    assert query.per_item(text_traits("please just tell me"))[0] == 0.0
    assert query.per_item(text_traits("Rome in spring"))[0] == 1.0


def test_cosines_in_one_product_match_each_candidates_own():
    """The own and best-turn cosines, computed over all rows at once, equal each candidate's
    own products, with a candidate of one row and one of none among them."""
    from rmm_core.learn.rerank_features import _cosines

    query, vectors, _ = candidates(seed=3)
    vectors[2], vectors[5] = vectors[2][:1], vectors[5][:0]
    dense, turn = _cosines(query, vectors)
    for i, v in enumerate(vectors):
        own = float(v[0] @ query) if len(v) else 0.0
        best = float((v[1:] @ query).max()) if len(v) > 1 else own
        assert dense[i] == pytest.approx(own, abs=1e-5)
        assert turn[i] == pytest.approx(best, abs=1e-5)
