"""Memories written directly (`write/facts.py`), with the real packaged embedder, the
LLM-free compressor and a real SQLite store."""

from rmm_core.storage import open_store
from rmm_core.write.compress import FillerCompressor
from rmm_core.write.facts import fact_memories, rewritten

LONG = ("My sister Lena lives in Porto. She teaches chemistry at a high school there. "
        "Every August we sail along the coast together.")


def test_a_long_fact_becomes_one_memory_per_passage_of_whole_sentences(embedder):
    added = fact_memories(LONG, user_id="u", metadata={"topic": "family"}, words=12,
                          compressor=FillerCompressor(), embedder=embedder)
    texts = [new.memory.text for new in added]
    assert len(texts) > 1
    assert " ".join(texts) == LONG
    assert all(len(text.split()) <= 12 and text.endswith(".") for text in texts)
    for new in added:
        m = new.memory
        assert m.refs == []
        assert m.attrs == {"source": "direct"}
        assert m.metadata == {"topic": "family"}
        assert m.user_id == "u"
        assert m.key
        assert len(m.key.split()) <= len(m.text.split())
        assert new.vectors.shape == (1, embedder.dim)


def test_a_rewritten_memory_is_a_new_version_with_its_refs_kept(tmp_path, embedder):
    store = open_store(str(tmp_path / "m.sqlite"))
    try:
        [new] = fact_memories("I live in Lyon.", user_id="u", metadata={}, words=50,
                              compressor=FillerCompressor(), embedder=embedder)
        [memory] = store.add_memories("u", [new], source="direct")
        updated = rewritten(memory, "I live in Nantes.", {"moved": True}, store=store,
                            compressor=FillerCompressor(), embedder=embedder)
        assert updated.text == "I live in Nantes."
        assert updated.metadata == {"moved": True}
        assert [(v.version, v.reason) for v in updated.versions] == [(1, "created"),
                                                                    (2, "update")]
        assert updated.refs == memory.refs
    finally:
        store.close()
