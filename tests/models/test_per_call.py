"""LLMs given to one call (`models/per_call.py`). The LLMs are scripted fakes (plain
callables): only which metered wrapper comes back is checked."""

from rmm_core.config import MemoryConfig
from rmm_core.models.llm import metered
from rmm_core.models.per_call import PerCallLLMs


def answer(prompt: str) -> str:
    return "ok"


def test_none_or_the_own_llm_give_the_own_one_and_another_is_metered_once():
    own = metered(answer, MemoryConfig())
    llms = PerCallLLMs(own, MemoryConfig())
    assert llms.get(None) is own
    assert llms.get(own) is own

    def other(prompt: str) -> str:
        return "other"

    first = llms.get(other)
    assert first is not own
    assert first.complete("hi") == "other"
    assert llms.get(other) is first


def test_only_the_last_few_are_kept():
    llms = PerCallLLMs(None, MemoryConfig(), keep=2)
    fakes = [lambda prompt, n=n: str(n) for n in range(3)]
    wrapped = [llms.get(f) for f in fakes]
    assert llms.get(fakes[2]) is wrapped[2]
    assert llms.get(fakes[1]) is wrapped[1]
    assert llms.get(fakes[0]) is not wrapped[0]  # pushed out by the later two
    assert llms.get(None) is None  # no own LLM
