"""`wrap_llm`: the core drives any LlamaIndex LLM (MockLLM echoes its prompt)."""

import pytest
from llama_index.core.llms import MockLLM

from llamaindex_rmm import wrap_llm
from llamaindex_rmm.llm import LlamaIndexLLM
from rmm_core.errors import InvalidInputError
from rmm_core.models.llm import as_llm


def test_as_llm_routes_llamaindex_models_here():
    llm = as_llm(MockLLM())
    assert isinstance(llm, LlamaIndexLLM)
    assert llm.complete("summarise: the cat sat") == "summarise: the cat sat"


async def test_async_completion():
    llm = wrap_llm(MockLLM(max_tokens=3))
    assert await llm.acomplete("anything") == "text text text"


def test_wrapping_is_idempotent():
    llm = wrap_llm(MockLLM())
    assert wrap_llm(llm) is llm


def test_non_llamaindex_object_is_a_typed_error():
    with pytest.raises(InvalidInputError, match="LlamaIndex LLM"):
        wrap_llm(object())
