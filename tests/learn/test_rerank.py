"""The learned reranker: identity at start, Gumbel exploration, REINFORCE that learns, weights
that persist and lose no concurrent update, once-only feedback, scopes and batching.

Unit tests of the maths use random vectors; the front-door tests use the real embedder.
Weights trained by the former torch implementation (tests/data/rerank_torch_*) must load and
score the same, and torch's autograd (where torch is installed) checks the gradient.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path

import numpy as np
import pytest

from rmm_core import FeedbackError, InvalidInputError, ReflectiveMemory
from rmm_core.errors import StorageError
from rmm_core.learn.rerank import COMBINE, FeatureWeights, LowRank, Reranker, Weights, WeightStore
from rmm_core.storage.base import user_state_name
from rmm_core.storage.sqlite import SQLiteStore

TOPICS = [
    "I adopted a puppy called Rex and we walk by the river every morning.",
    "My sister is getting married in Lisbon next June, I am the maid of honour.",
    "I started learning the cello; my teacher says my bowing is improving.",
    "We repainted the kitchen a pale green colour over the long weekend.",
    "The marathon in Berlin took me four hours and twelve minutes to finish.",
    "I'm reading a novel about a lighthouse keeper on a remote island.",
]


def unit(rng: np.random.Generator, *shape: int) -> np.ndarray:
    v = rng.standard_normal(shape).astype(np.float32)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def candidates(rng: np.random.Generator, k: int = 20, dim: int = 16):
    query = unit(rng, dim)
    vectors = [unit(rng, int(rng.integers(1, 4)), dim) for _ in range(k)]
    fused = np.sort(rng.uniform(0.3, 0.6, k))[::-1].tolist()
    return query, vectors, fused


LEARNERS = ["features", "rmm"]
"""The rerankers that learn: the front-door tests run for each, from zero weights."""


@pytest.fixture(params=LEARNERS)
def learner(request, open_memory):
    """Opens memories with one learning reranker, starting from zero weights."""
    return lambda **settings: open_memory(**{"reranker.kind": request.param,
                                             "reranker.weights": None, **settings})


@pytest.fixture
def bank(learner) -> ReflectiveMemory:
    mem = learner()
    for i, text in enumerate(TOPICS):
        mem.add_session([{"speaker": "user", "text": text, "id": f"t{i}"}], user_id="u1",
                        session_id=f"s{i}")
    return mem


# the maths ------------------------------------------------------------------------------------
@pytest.mark.parametrize("combine", ["zscore", "residual"])
def test_untrained_reranker_keeps_retrieval_order(combine):
    query, vectors, fused = candidates(np.random.default_rng(0))
    ranking = Reranker(combine=combine).rank(Weights.zeros(16), query, vectors, fused, 5)
    assert ranking.order == list(range(20))


def test_weights_change_the_order():
    rng = np.random.default_rng(1)
    query, vectors, fused = candidates(rng)
    target = vectors[-1][0]
    weights = Weights(np.zeros((16, 16), np.float32), np.outer(query, target))
    ranking = Reranker().rank(weights, query, vectors, fused, 5)
    assert ranking.order[0] == 19


def test_exploration_samples_and_prefers_the_top():
    query, vectors, fused = candidates(np.random.default_rng(2))
    reranker, weights = Reranker(rng=np.random.default_rng(0)), Weights.zeros(16)
    firsts = [reranker.rank(weights, query, vectors, fused, 5, explore=True).order[0]
              for _ in range(400)]
    counts = np.bincount(firsts, minlength=20)
    assert len(set(firsts)) > 3  # it explores
    assert counts[0] > counts[10]
    assert counts[0] > counts[19]
    plain = {tuple(reranker.rank(weights, query, vectors, fused, 5).order) for _ in range(20)}
    assert len(plain) == 1  # without exploration the order is deterministic


def test_reinforce_step_raises_cited_and_lowers_uncited():
    query, vectors, fused = candidates(np.random.default_rng(3))
    reranker = Reranker()
    weights = Weights.zeros(16)
    ranking = reranker.rank(weights, query, vectors, fused, 5)
    rewards = [-1.0, -1.0, 1.0, -1.0, -1.0]
    g_q, g_m = reranker.gradient(weights, ranking, rewards)
    new = Weights(-0.05 * g_q.matrix(), -0.05 * g_m.matrix())
    args = (ranking.query, ranking.rows, ranking.mask, ranking.fused)
    delta = reranker.scores(new, *args) - reranker.scores(weights, *args)
    kept = ranking.order[:5]
    assert delta[kept[2]] > 0
    assert all(delta[kept[i]] < delta[kept[2]] for i in (0, 1, 3, 4))


def test_reinforce_learns_a_hidden_preference():
    """The 'cited' memories lie along P q for a hidden rotation P (a query-dependent
    preference, which is what a bilinear q'.m' can express); after training with
    exploration the deterministic top 5 holds more of them."""
    rng = np.random.default_rng(4)
    dim = 8
    rotation = np.linalg.qr(np.random.default_rng(9).standard_normal((dim, dim)))[0]
    reranker, weights = Reranker(mix=10.0, rng=np.random.default_rng(0)), Weights.zeros(dim)

    def episode():
        query, vectors, fused = candidates(rng, dim=dim)
        good = set(rng.choice(20, 3, replace=False).tolist())
        target = rotation @ query
        for i in good:
            v = target + 0.3 * unit(rng, dim)
            vectors[i] = (v / np.linalg.norm(v))[None, :].astype(np.float32)
        return query, vectors, fused, good

    def precision(w, n=100):
        hits = []
        for _ in range(n):
            query, vectors, fused, good = episode()
            order = reranker.rank(w, query, vectors, fused, 5).order[:5]
            hits.append(len(good & set(order)) / 3)
        return float(np.mean(hits))

    before = precision(weights)
    for _ in range(300):
        query, vectors, fused, good = episode()
        ranking = reranker.rank(weights, query, vectors, fused, 5, explore=True)
        rewards = [1.0 if i in good else -1.0 for i in ranking.order[:5]]
        g_q, g_m = reranker.gradient(weights, ranking, rewards)
        weights = Weights(weights.w_q - 0.01 * g_q.matrix(), weights.w_m - 0.01 * g_m.matrix())
    assert precision(weights) > before + 0.2


def test_reranker_seed_makes_exploration_reproducible(embedder):
    def explored(seed):
        with ReflectiveMemory.open(":memory:", embedder=embedder, reranker={"seed": seed}) as mem:
            for i, text in enumerate(TOPICS):
                mem.add_session([{"speaker": "user", "text": text}], user_id="u",
                                session_id=f"s{i}")
            return [[h.memory.text for h in mem.search("my hobbies", user_id="u", k=3,
                                                        explore=True)] for _ in range(8)]

    assert explored(3) == explored(3)
    assert explored(3) != explored(4)


def test_unknown_combine_is_a_typed_error():
    with pytest.raises(InvalidInputError, match="zscore"):
        Reranker(combine="magic")


def logged(store, name: str | None = None) -> int:
    """Reranker steps logged in the store under `name` (default: every global scope's), fewer
    than 64: none folded into the base yet."""
    names = [name] if name else ["reranker/global", "reranker-features/global"]
    return sum(len(store.state_log(n)[1]) for n in names)


def steps(mem: ReflectiveMemory, user_id: str = "") -> int:
    """Feedback steps in the weights that rank `user_id`'s searches."""
    return mem.reranker.weights_for(user_id, mem.embedder.dim).steps


def is_zero(weights) -> bool:
    arrays = [weights.w] if isinstance(weights, FeatureWeights) else [weights.w_q, weights.w_m]
    return not any(a.any() for a in arrays)


# persistence -----------------------------------------------------------------------------------
def test_weights_roundtrip_and_corrupt_blob():
    rng = np.random.default_rng(0)
    w = Weights(*rng.standard_normal((2, 8, 8)).astype(np.float32), 7)
    back = Weights.from_bytes(w.to_bytes())
    assert np.array_equal(back.w_q, w.w_q)
    assert np.array_equal(back.w_m, w.w_m)
    assert back.steps == 7
    with pytest.raises(StorageError):
        Weights.from_bytes(b"not weights")


def _hammer(path: str, seed: int, steps: int) -> None:
    store = SQLiteStore(path)
    weights = WeightStore(store, compact_every=4)  # compactions race with the steps too
    for _ in range(steps):
        weights.add("reranker/global", (LowRank.outer(np.full(4, seed), np.ones(4)),
                                        LowRank.outer(np.ones(4), np.ones(4))))
    store.close()


def test_concurrent_steps_from_threads_and_processes_lose_nothing(tmp_path):
    path = str(tmp_path / "w.sqlite")
    SQLiteStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_hammer, args=(path, seed, 15)) for seed in (1, 2)]
    threads = [threading.Thread(target=_hammer, args=(path, seed, 15)) for seed in (3, 4)]
    for worker in procs + threads:
        worker.start()
    for worker in procs + threads:
        worker.join(timeout=120)
    assert all(p.exitcode == 0 for p in procs)
    store = SQLiteStore(path)
    final = WeightStore(store).load("reranker/global", 4)
    version, left = store.state_log("reranker/global")
    store.close()
    assert final.steps == 60
    assert version > 0
    assert len(left) < 60
    # every step subtracted lr * its gradient: the sum is exact only if none was lost
    np.testing.assert_allclose(final.w_q, np.full((4, 4), -1e-3 * 15 * (1 + 2 + 3 + 4)),
                               rtol=1e-5)
    np.testing.assert_allclose(final.w_m, np.full((4, 4), -1e-3 * 60), rtol=1e-5)


# the front door ---------------------------------------------------------------------------------
def test_search_untrained_keeps_fused_order(bank):
    res = bank.search("what pet do I have?", user_id="u1", k=3)
    assert [h.memory.id for h in res] == [h.memory.id for h in res.candidates[:3]]
    assert res[0].refs == ["t0"]


def test_feedback_persists_survives_reopen_and_changes_scores(bank, open_memory):
    query = "tell me about music"
    before = bank.search(query, user_id="u1", k=3)
    last = before[-1].memory.id
    for _ in range(3):
        res = bank.search(query, user_id="u1", k=3)
        bank.feedback(res, cited=[h for h in res if h.memory.id == last])
    assert logged(bank.store) == 3
    again = open_memory(reranker={"kind": bank.config.reranker.kind, "weights": None})
    after = again.search(query, user_id="u1", k=3)
    assert not np.array_equal(after.state["ranking"].scores, before.state["ranking"].scores)
    assert steps(again) == 3


def test_feedback_once_only_and_bad_citations_lose_nothing(bank):
    res = bank.search("where is the wedding?", user_id="u1", k=2)
    other = bank.search("kitchen colour", user_id="u1", k=1)
    stray = next(h.memory.id for h in other.candidates if h.memory.id not in
                 {x.memory.id for x in res})
    with pytest.raises(FeedbackError, match="not among"):
        bank.feedback(res, cited=[stray])
    with pytest.raises(InvalidInputError):
        bank.feedback(res, cited=res[0].memory.id)  # a bare string, not a list
    assert logged(bank.store) == 0
    bank.feedback(res, cited=[])  # the result was not used up by the bad calls
    with pytest.raises(FeedbackError, match="already"):
        bank.feedback(res, cited=[])
    assert logged(bank.store) == 1


def test_feedback_that_fails_leaves_the_result_unclaimed(bank):
    res = bank.search("where is the wedding?", user_id="u1", k=2)
    wrong = Weights.zeros(8) if bank.config.reranker.kind == "rmm" else FeatureWeights.zeros(3)
    name = bank.reranker.state_name("u1")
    bank.store.save_state(name, 0, wrong.to_bytes())  # wrong dim
    bank.reranker.weights.discard(name)  # as in a process that has not read them yet
    with pytest.raises(StorageError, match="dimension"):
        bank.feedback(res, cited=[])
    assert bank.store.claim_feedback(res.id, "u1")  # the failed call did not use it up


def test_a_step_that_cannot_be_logged_leaves_the_result_unclaimed(bank, store_target):
    """Claiming a result and logging its step are one transaction: when the log write fails
    (here a trigger stands in for a full disk), the claim is rolled back with it."""
    import sqlite3

    res = bank.search("marathon time", user_id="u1", k=2)
    with sqlite3.connect(store_target) as conn:
        conn.execute("CREATE TRIGGER full BEFORE INSERT ON state_deltas "
                     "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    with pytest.raises(StorageError, match="disk is full"):
        bank.feedback(res, cited=[res[0].memory.id])
    with sqlite3.connect(store_target) as conn:
        conn.execute("DROP TRIGGER full")
    bank.feedback(res, cited=[res[0].memory.id])  # not "already had its feedback"
    assert logged(bank.store) == 1


def test_feedback_on_an_empty_result_is_a_typed_error(bank):
    res = bank.search("anything", user_id="nobody", k=3)
    with pytest.raises(FeedbackError, match="no hits"):
        bank.feedback(res, cited=[])


U1 = WeightStore.name("user", "u1")


def test_user_scope_keeps_weights_apart(learner):
    mem = learner(reranker={"scope": "user"})
    u1, u2 = mem.reranker.state_name("u1"), mem.reranker.state_name("u2")
    for user in ("u1", "u2"):
        for i, text in enumerate(TOPICS[:3]):
            mem.add_session([{"speaker": "user", "text": text}], user_id=user,
                            session_id=f"s{i}")
    res = mem.search("cello lessons", user_id="u1", k=2)
    mem.feedback(res, cited=[res[0].memory.id])
    assert logged(mem.store, u1) == 1
    assert logged(mem.store, u2) == 0
    assert logged(mem.store) == 0


def test_forget_erases_the_users_own_weights_and_keeps_the_others(learner):
    mem = learner(reranker={"scope": "user"})
    u1 = mem.reranker.state_name("u1")
    for user in ("u1", "u2"):
        for i, text in enumerate(TOPICS[:3]):
            mem.add_session([{"speaker": "user", "text": text}], user_id=user,
                            session_id=f"s{i}")
        res = mem.search("cello lessons", user_id=user, k=2)
        mem.feedback(res, cited=[res[0].memory.id])
    assert steps(mem, "u1") == 1  # now cached
    mem.forget(user_id="u1")
    assert logged(mem.store, u1) == 0
    erased = mem.reranker.weights_for("u1", mem.embedder.dim)
    assert erased.steps == 0
    assert is_zero(erased)
    assert "u1" not in u1  # the erased row's name does not keep the forgotten user's id
    assert steps(learner(reranker={"scope": "user"}), "u1") == 0
    assert steps(mem, "u2") == 1
    mem.add_session([{"speaker": "user", "text": TOPICS[0]}], user_id="u1", session_id="s9")
    res = mem.search("cello lessons", user_id="u1", k=1)
    mem.feedback(res, cited=[])  # learning starts again from zero
    assert steps(mem, "u1") == 1


@pytest.mark.backends
def test_schema_2_per_user_state_moves_to_hashed_names(open_memory, store_target):
    """Before schema 3, per-user weights and workflows were named `reranker/user/<id>` and
    `workflows/user/<id>`; opening renames them to names under the hashed id."""
    mem = open_memory(reranker={"scope": "user", "kind": "rmm"})
    mem.add_session([{"speaker": "user", "text": TOPICS[0]}], user_id="u1", session_id="s1")
    res = mem.search("cello lessons", user_id="u1", k=1)
    mem.feedback(res, cited=[res[0].memory.id])
    flows = user_state_name("u1", "workflows")
    assert mem.store.save_state(flows, 0, b"[]")
    mem.close()
    _raw_sql(store_target, [
        ("UPDATE state_deltas SET name = 'reranker/user/u1' WHERE name = {}", U1),
        ("UPDATE named_state SET name = 'reranker/user/u1' WHERE name = {}", U1),
        ("UPDATE named_state SET name = 'workflows/user/u1' WHERE name = {}", flows),
        ("UPDATE meta SET value = '2' WHERE key = {}", "schema_version")])
    mem = open_memory(reranker={"scope": "user", "kind": "rmm"})
    assert logged(mem.store, "reranker/user/u1") == 0
    assert mem.reranker.weights.load(U1, mem.embedder.dim).steps == 1
    assert mem.store.load_state("workflows/user/u1") == (0, None)
    assert mem.store.load_state(flows) == (1, b"[]")


def _raw_sql(target: str, statements: list[tuple[str, str]]) -> None:
    """Run `sql.format(placeholder)` with one parameter on the store's database directly."""
    if "rmm_schema=" not in target:
        import sqlite3

        with sqlite3.connect(target) as conn:
            for sql, param in statements:
                conn.execute(sql.format("?"), (param,))
        return
    import psycopg
    from backends import split_target

    url, schema = split_target(target)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {schema}, public")
        for sql, param in statements:
            conn.execute(sql.format("%s"), (param,))


def test_batching_writes_every_n_and_flushes_on_close(bank, learner, store_target):
    bank.close()
    mem = learner(reranker={"batch": 3})
    for n in range(4):
        res = mem.search("marathon time", user_id="u1", k=2)
        mem.feedback(res, cited=[res[0].memory.id])
        assert logged(mem.store) == (1 if n >= 2 else 0)
    mem.close()
    store = SQLiteStore(store_target)
    assert logged(store) == 2
    assert steps(learner()) == 4
    store.close()


async def test_async_search_and_feedback(bank):
    res = await bank.asearch("novel about a lighthouse", user_id="u1", k=2, explore=True)
    await bank.afeedback(res, cited=[res[0].memory.id])
    assert logged(bank.store) == 1


TORCH_ERA = Path(__file__).parents[1] / "data"


@pytest.mark.parametrize("combine", sorted(COMBINE))
def test_weights_trained_by_the_torch_reranker_score_the_same(combine):
    """The blob and figures were written by the torch implementation this module replaced:
    its trained weights load, and rank, score and give the gradient it gave (float32
    rounding: the former logsumexp in float32 was the less exact of the two)."""
    weights = Weights.from_bytes((TORCH_ERA / "rerank_torch_weights.bin").read_bytes())
    probe = json.loads((TORCH_ERA / "rerank_torch_expected.json").read_text())
    expected = probe[combine]
    reranker = Reranker(combine=combine)
    ranking = reranker.rank(weights, np.array(probe["query"], np.float32),
                            [np.array(v, np.float32) for v in probe["vectors"]],
                            probe["fused"], 5)
    assert weights.steps == 40
    assert ranking.order == expected["order"]
    # the probe's inputs are stored to 7 decimals; scores reach 110
    np.testing.assert_allclose(ranking.scores, expected["scores"], rtol=1e-5, atol=1e-4)
    g_q, g_m = reranker.gradient(weights, ranking, [1.0, -1.0, -1.0, 1.0, -1.0])
    for grad, old in ((g_q, expected["grad_q"]), (g_m, expected["grad_m"])):
        np.testing.assert_allclose(grad.matrix(), old, atol=1e-3 * np.abs(old).max())


@pytest.mark.parametrize("combine", sorted(COMBINE))
def test_outer_product_gradient_equals_autograd_through_the_full_scores(combine):
    """`gradient` uses the closed form; torch's autograd through the whole forward pass (in
    float64) must agree."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    weights = Weights(*(0.1 * rng.standard_normal((2, 12, 12))).astype(np.float32))
    vectors = [rng.standard_normal((n, 12)).astype(np.float32) for n in (2, 1, 4, 3, 2, 5)]
    query = rng.standard_normal(12).astype(np.float32)
    reranker = Reranker(combine=combine, rng=rng)
    ranking = reranker.rank(weights, query, vectors, [0.5, 0.2, 0.4, 0.1, 0.3, 0.6], 3,
                            explore=True)
    rewards = [1.0, -1.0, -1.0]
    g_q, g_m = reranker.gradient(weights, ranking, rewards)

    w_q, w_m = (torch.tensor(w, dtype=torch.float64, requires_grad=True)
                for w in (weights.w_q, weights.w_m))
    q, rows, fused = (torch.tensor(a, dtype=torch.float64)
                      for a in (ranking.query, ranking.rows, ranking.fused))
    mask = torch.from_numpy(ranking.mask)
    best = ((rows + rows @ w_m.T) @ (q + w_q @ q)).masked_fill(~mask, -torch.inf).amax(1)
    r0 = (rows @ q).masked_fill(~mask, -torch.inf).amax(1)
    mix, z = reranker.mix, (fused - fused.mean()) / (fused.std(correction=0) + 1e-6)
    score = {"zscore": z + mix * (best - r0), "residual": fused + mix * (best - r0),
             "blend": (1 - mix) * fused + mix * best, "reranker": best}[combine]
    logits = score / reranker.temperature
    remaining = torch.ones(len(logits), dtype=torch.bool)
    loss = logits.new_zeros(())
    for j, reward in zip(ranking.order[:3], rewards):
        loss = loss - (reward - 0.5) * (logits[j] - torch.logsumexp(logits[remaining], dim=0))
        remaining = remaining.clone()
        remaining[j] = False
    loss.backward()
    np.testing.assert_allclose(g_q.matrix(), w_q.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g_m.matrix(), w_m.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_supervised_bound_fits_the_train_questions(locomo_path):
    """The bench's bound trains the reranker's own maps on oracle labels: fitted on a
    conversation's questions, it must rank more of their evidence into the top 5."""
    pytest.importorskip("torch")  # the bound's Adam: the `torch` extra
    from rmm_core.bench.locomo import load_locomo
    from rmm_core.bench.rerank import supervised_bound

    conv = load_locomo(locomo_path, select=[1])[0]
    conv.questions[:] = conv.questions[:60]
    with ReflectiveMemory.open(":memory:", progress=False, reranker={"kind": "rmm"}) as mem:
        mem.add_sessions([{"turns": s.turns, "session_id": s.session_id,
                           "started_at": s.started_at} for s in conv.sessions],
                         user_id=conv.sample_id)
        bound = supervised_bound(mem, [conv], [conv], epochs=40, lr=1e-3)
    assert bound["train_before"] == bound["test_before"] < 100
    assert bound["train_after"] >= bound["train_before"] + 5
