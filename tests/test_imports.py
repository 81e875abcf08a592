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


def test_the_old_name_of_the_adapter_guard_still_imports_and_warns():
    import importlib
    import sys

    import pytest

    sys.modules.pop("rmm_core.policy", None)
    with pytest.warns(DeprecationWarning, match="now rmm_core.adapter_guard"):
        policy = importlib.import_module("rmm_core.policy")
    from rmm_core.adapter_guard import check_arguments

    assert policy.check_arguments is check_arguments
