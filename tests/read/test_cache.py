"""Each user's cached index (`read/cache.py`) over a real SQLite store and the real packaged
embedder: kept while nothing changed, brought up to date from the change log, dropped."""

from rmm_core.lru import ByteLRU
from rmm_core.read.cache import IndexCache, index_key
from rmm_core.read.index import english_stemmer
from rmm_core.storage import open_store
from rmm_core.write.compress import FillerCompressor
from rmm_core.write.facts import fact_memories


def add(store, embedder, user, text):
    new = fact_memories(text, user_id=user, metadata={}, words=50,
                        compressor=FillerCompressor(), embedder=embedder)
    return store.add_memories(user, new, source="direct")[0]


def test_an_index_is_kept_updated_in_place_and_dropped(tmp_path, embedder):
    store = open_store(str(tmp_path / "m.sqlite"))
    cache = ByteLRU(2**30)
    indexes = IndexCache(store, cache, english_stemmer())
    first = add(store, embedder, "u", "I play the cello on Sundays.")
    index = indexes.get("u")
    assert index.ids == [first.id]
    assert indexes.get("u") is index
    second = add(store, embedder, "u", "My brother lives in Oslo.")
    updated = indexes.get("u")
    assert updated.ids == [first.id, second.id]
    assert updated._chain is index._chain  # the change applied, not a rebuild
    assert indexes.get("other").ids == []
    assert index_key("u") in cache.keys()
    indexes.drop("u")
    assert index_key("u") not in cache.keys()
    rebuilt = indexes.get("u")
    assert rebuilt.ids == updated.ids
    assert rebuilt._chain is not updated._chain
    store.close()


def test_an_index_larger_than_the_budget_is_not_rebuilt_when_other_entries_push_it_out(
        tmp_path, embedder, caplog):
    store = open_store(str(tmp_path / "m.sqlite"))
    cache = ByteLRU(1)  # every index is larger than this budget
    indexes = IndexCache(store, cache, english_stemmer())
    add(store, embedder, "u", "I play the cello on Sundays.")
    with caplog.at_level("WARNING", logger="rmm_core.read.cache"):
        index = indexes.get("u")
    assert "more than storage.cache_bytes" in caplog.text
    cache.put("weights", object(), 1)  # a reranker's weights evict the index from the cache
    assert index_key("u") not in cache.keys()
    assert indexes.get("u") is index  # still served, not rebuilt
    indexes.get("other")  # another user's index becomes the one kept
    assert indexes.get("u") is not index
    assert indexes.get("u").ids == index.ids
    indexes.drop("u")
    assert indexes.get("u") is not index
    store.close()
