"""The public names of langchain_rmm, pinned."""

from __future__ import annotations

import pytest

import langchain_rmm

EXPECTED_ALL = ["RMMMemory", "RMMMiddleware", "RMMRetriever", "RMMStore", "WorkflowMiddleware",
                "agent_memory_tools", "format_memories", "memory_tools"]


def test_all_imports() -> None:
    assert sorted(langchain_rmm.__all__) == sorted(EXPECTED_ALL)
    for name in EXPECTED_ALL:
        assert getattr(langchain_rmm, name).__name__ == name


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        langchain_rmm.RMMSomethingElse  # noqa: B018
