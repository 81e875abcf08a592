"""`RMMReranker` reorders any retriever's nodes with the learned reranker (no LLM)."""

from __future__ import annotations

import numpy as np
import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from llamaindex_rmm import RMMReranker, hits_to_nodes
from rmm_core import ReflectiveMemory
from rmm_core.errors import InvalidInputError
from rmm_core.learn.rerank import Weights, WeightStore

QUERY = "What pets does the user have?"
TEXTS = [
    "The user owns two cats named Miso and Tofu.",
    "The user went hiking in the Alps last summer.",
    "The user's favourite food is ramen.",
    "The user is learning to play the cello.",
]


@pytest.fixture
def mem(embedder):
    """The paper's bilinear reranker: its q'.m' scores any text by its vectors alone."""
    mem = ReflectiveMemory.open(":memory:", embedder=embedder, reranker={"kind": "rmm"})
    yield mem
    mem.close()


def foreign_nodes() -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(text=t), score=0.0) for t in TEXTS]


def texts_of(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.get_content() for n in nodes]


def test_untrained_reranker_orders_foreign_nodes_by_similarity(mem):
    reranker = RMMReranker(memory=mem, user_id="u1", top_n=2)
    out = reranker.postprocess_nodes(foreign_nodes()[::-1], query_str=QUERY)
    assert texts_of(out)[0] == TEXTS[0]
    assert len(out) == 2
    assert out[0].score >= out[1].score


def test_learned_weights_change_the_order(mem, embedder):
    reranker = RMMReranker(memory=mem, user_id="u1", top_n=4)
    before = texts_of(reranker.postprocess_nodes(foreign_nodes(), query_str=QUERY))
    # Teach W_m to map the cello text onto the query: its score rises above the pets text.
    q, t = embedder.embed([QUERY, TEXTS[3]])
    weights = Weights(np.zeros((embedder.dim, embedder.dim), np.float32), 2.0 * np.outer(q, t), 1)
    name = WeightStore.name(mem.config.reranker.scope, "u1")
    version, _ = mem.store.load_state(name)
    assert mem.store.save_state(name, version, weights.to_bytes())
    after = texts_of(reranker.postprocess_nodes(foreign_nodes(), query_str=QUERY))
    assert before[0] == TEXTS[0]
    assert after[0] == TEXTS[3]


def test_feedback_changes_the_order_of_our_nodes(mem):
    mem.add_session([{"speaker": "user", "text": t} for t in TEXTS], user_id="u1",
                    session_id="s1")
    mem.add_session([{"speaker": "user", "text": "I adopted a puppy called Rex."}],
                    user_id="u1", session_id="s2")
    reranker = RMMReranker(memory=mem, user_id="u1", top_n=10)
    result = mem.search(QUERY, user_id="u1", k=10)
    nodes = hits_to_nodes(result)
    before = [n.node.node_id for n in reranker.postprocess_nodes(nodes, query_str=QUERY)]
    target = before[-1]
    for _ in range(200):
        res = mem.search(QUERY, user_id="u1", k=10)
        mem.feedback(res, cited=[target] if target in {h.memory.id for h in res} else [])
        after = [n.node.node_id for n in reranker.postprocess_nodes(nodes, query_str=QUERY)]
        if after != before:
            break
    assert after != before
    assert after.index(target) < before.index(target)


async def test_async_path_and_our_nodes_use_stored_vectors(mem):
    mem.add_session([{"speaker": "user", "text": TEXTS[0]}], user_id="u1", session_id="s1")
    ours = hits_to_nodes(mem.search("cats", user_id="u1", k=1))
    assert ours
    assert ours[0].node.metadata["rmm_memory_id"] == ours[0].node.node_id
    reranker = RMMReranker(memory=mem, user_id="u1")
    out = await reranker.apostprocess_nodes(ours + foreign_nodes()[1:], query_str=QUERY)
    assert out[0].node.node_id == ours[0].node.node_id
    scores = mem.rerank_texts(QUERY, ["unused text"], user_id="u1",
                              memory_ids=[ours[0].node.node_id])
    assert np.isclose(scores[0], out[0].score)  # scored from the memory, not the text


def test_bad_use_is_a_typed_error(mem):
    reranker = RMMReranker(memory=mem, user_id="u1")
    with pytest.raises(InvalidInputError, match="query"):
        reranker.postprocess_nodes(foreign_nodes())
    assert reranker.postprocess_nodes([], query_str=QUERY) == []
    with pytest.raises(InvalidInputError, match="ReflectiveMemory"):
        RMMReranker(memory=None, user_id="u1")
    with pytest.raises(InvalidInputError, match="top_n must be a positive integer"):
        RMMReranker(memory=mem, user_id="u1", top_n=0)
