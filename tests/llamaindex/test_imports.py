"""The public names of llamaindex_rmm, pinned."""

import llamaindex_rmm

EXPECTED = ["RMMMemory", "RMMMemoryBlock", "RMMReranker", "WorkflowAgentHook", "hits_to_nodes",
            "memory_tools",
            "wrap_llm"]


def test_all_is_pinned():
    assert sorted(llamaindex_rmm.__all__) == sorted(EXPECTED)


def test_every_name_resolves():
    for name in EXPECTED:
        assert getattr(llamaindex_rmm, name) is not None
