"""A LangChain chat model as the core's LLM (scripted fake chat models and a fake string LLM)."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.messages import AIMessage

from langchain_rmm.llm import ChatModelLLM, wrap_llm
from rmm_core.errors import InvalidInputError
from rmm_core.models.llm import MeteredLLM, as_llm


def test_core_dispatches_chat_models_here_and_gets_text(chat_model):
    model = chat_model("a summary")
    llm = as_llm(model)
    assert isinstance(llm, ChatModelLLM)
    assert llm.complete("Summarise this.") == "a summary"
    assert [(m.type, m.text) for m in model.seen[-1]] == [("human", "Summarise this.")]
    assert wrap_llm(llm) is llm


async def test_async_completion(chat_model):
    assert await wrap_llm(chat_model("async answer")).acomplete("q") == "async answer"


def test_reported_token_usage_reaches_the_meter(chat_model):
    answer = AIMessage(content="ok", usage_metadata={"input_tokens": 11, "output_tokens": 3,
                                                     "total_tokens": 14})
    metered = MeteredLLM(wrap_llm(chat_model(answer)))
    assert metered.complete("hello") == "ok"
    assert metered.totals["prompt_tokens"] == 11
    assert metered.totals["completion_tokens"] == 3


def test_text_completion_models_work_too():
    assert wrap_llm(FakeListLLM(responses=["plain text"])).complete("q") == "plain text"


def test_content_blocks_are_joined_into_text(chat_model):
    blocks = AIMessage(content=[{"type": "text", "text": "first "}, {"type": "text",
                                                                     "text": "second"}])
    assert wrap_llm(chat_model(blocks)).complete("q") == "first second"


def test_non_models_are_rejected_with_a_typed_error():
    with pytest.raises(InvalidInputError):
        wrap_llm(object())


def test_memory_opened_with_a_chat_model_prompts_it_on_reflection(chat_model, embedder):
    from rmm_core import ReflectiveMemory

    model = chat_model("NO_TRAIT")
    with ReflectiveMemory.open(":memory:", llm=model, embedder=embedder) as mem:
        mem.add_session([{"speaker": "user", "text": "I moved to Porto in March."},
                         {"speaker": "assistant", "text": "Porto is lovely."}], user_id="u1")
        assert model.seen
        assert all(m[0].type == "human" for m in model.seen)
        assert mem.usage(user_id="u1")["calls"] == len(model.seen)
