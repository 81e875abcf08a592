"""The public names of llamaindex_rmm, pinned."""

import llamaindex_rmm

EXPECTED = ["RMMChatMemory", "RMMMemoryBlock", "RMMReranker", "WorkflowAgentHook", "hits_to_nodes",
            "memory_tools",
            "wrap_llm"]


def test_all_is_pinned():
    assert sorted(llamaindex_rmm.__all__) == sorted(EXPECTED)


def test_every_name_resolves():
    for name in EXPECTED:
        assert getattr(llamaindex_rmm, name) is not None


def test_the_old_name_of_the_chat_memory_still_imports_and_warns():
    import pytest

    with pytest.warns(DeprecationWarning, match="now RMMChatMemory"):
        from llamaindex_rmm import RMMMemory
    assert RMMMemory is llamaindex_rmm.RMMChatMemory
