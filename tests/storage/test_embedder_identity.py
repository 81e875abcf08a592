"""A store refuses an embedder of another model with a typed error that says what to do.

Real SQLite files and the real PostgreSQL backend (`backends` marker), the packaged
embedder against deterministic hash embedders of the same dimension.
"""

from __future__ import annotations

import pytest

from rmm_core import ReflectiveMemory, Turn
from rmm_core.errors import EmbedderMismatchError
from rmm_core.models.embed import HashEmbedder
from rmm_core.storage import open_store

pytestmark = pytest.mark.backends


class SameName(HashEmbedder):
    """Another model under the name of the packaged one (two local models in folders of
    the same name are named alike)."""

    def __init__(self, name: str) -> None:
        super().__init__(384)
        self.name = name


def test_another_model_under_the_same_name_is_refused(store_target, embedder):
    """Attack: open a store with another model of the same dimension that carries the same
    name, whose vectors would be mixed with the stored ones unnoticed."""
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:
        mem.add("Carol waters the ferns on Sundays.", user_id="u")
    with pytest.raises(EmbedderMismatchError, match="another model under the same name"):
        ReflectiveMemory.open(store_target, embedder=SameName(embedder.name))
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:
        assert len(mem.search("ferns", user_id="u", k=3)) == 1


def test_a_mismatched_embedder_is_a_typed_error_that_says_what_to_do(store_target, embedder):
    """Attack: open a store with another model (of the same or another dimension) and get a
    plain error that names no way out; the typed error names both models and the fix."""
    with ReflectiveMemory.open(store_target, embedder=HashEmbedder(384)) as mem:
        mem.add("Carol waters the ferns on Sundays.", user_id="u")
    with pytest.raises(EmbedderMismatchError) as refused:
        ReflectiveMemory.open(store_target, embedder=embedder)
    message = str(refused.value)
    assert "hash-384" in message
    assert embedder.name in message
    assert "open a new store with it and add the memories again" in message
    with pytest.raises(EmbedderMismatchError, match="384 dimensions"):
        ReflectiveMemory.open(store_target, embedder=HashEmbedder(64))
    with ReflectiveMemory.open(store_target, embedder=HashEmbedder(384)) as mem:
        assert mem.store.counts("u")["memories"] == 1


def test_an_open_that_writes_nothing_does_not_pin_the_model(store_target, embedder):
    """Attack: a look at an empty store with another model (`rmm stats`, the inspector, a
    test run) pinned that model, and the application's own was then refused."""
    with ReflectiveMemory.open(store_target, embedder=HashEmbedder(384)) as mem:
        assert mem.memories(user_id="u") == []
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:
        mem.add("Carol waters the ferns on Sundays.", user_id="u")
    with pytest.raises(EmbedderMismatchError, match="built with the embedder all-MiniLM"):
        ReflectiveMemory.open(store_target, embedder=HashEmbedder(384))


def test_two_openers_of_an_empty_store_with_other_models_cannot_both_write(store_target,
                                                                           embedder):
    """Attack: two processes open an empty store at once with models of the same dimension
    and both write: the one writing second is refused, and writes nothing."""
    first = ReflectiveMemory.open(store_target, embedder=HashEmbedder(384))
    second = ReflectiveMemory.open(store_target, embedder=embedder)
    try:
        [fern] = first.add("Carol waters the ferns on Sundays.", user_id="u")
        with pytest.raises(EmbedderMismatchError, match="built with the embedder hash-384"):
            second.add("Dan feeds the cat at noon.", user_id="v")
        with pytest.raises(EmbedderMismatchError, match="built with the embedder hash-384"):
            second.update(fern.id, "Carol waters the ferns on Mondays.", user_id="u")
        with pytest.raises(EmbedderMismatchError):  # its turns are kept, unreflected
            second.add_session([Turn("me", "I adopted a dog called Rex.")], user_id="v")
        assert second.memories(user_id="v") == []
        assert [m.text for m in first.memories(user_id="u")] == [fern.text]
        first.add("Dan feeds the cat at noon.", user_id="u")
    finally:
        first.close()
        second.close()


def test_one_store_object_given_two_models_before_any_write_is_refused(store_target,
                                                                       embedder):
    """Attack: hand one empty store object to two memories with other models of the same
    dimension before either writes: the second is refused at once, as on a store with
    vectors, instead of taking over the record the first's writes would make."""
    store = open_store(store_target)
    first = ReflectiveMemory(store, embedder=HashEmbedder(384))
    with pytest.raises(EmbedderMismatchError, match="built with the embedder hash-384"):
        ReflectiveMemory(store, embedder=embedder)
    first.add("Carol waters the ferns on Sundays.", user_id="u")
    assert store.embedder().name == "hash-384"
    first.close()
