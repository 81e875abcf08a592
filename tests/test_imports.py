"""The public names of rmm_core, pinned: they stay exactly these whatever moves inside."""

import rmm_core

EXPECTED = ["FeedbackError", "InvalidInputError", "LLMError", "LLMFallbackWarning", "Memory",
            "MemoryConfig", "MemoryHit", "MemoryVersion", "MissingDependencyError",
            "NotFoundError", "RMMError", "ReflectiveMemory", "SearchResult", "StorageError",
            "Turn"]


def test_all_is_pinned():
    assert sorted(rmm_core.__all__) == sorted(EXPECTED)


def test_every_name_resolves_to_a_class_of_that_name():
    for name in EXPECTED:
        value = getattr(rmm_core, name)
        assert isinstance(value, type)
        assert value.__name__ == name
        assert value.__module__.startswith("rmm_core.")
