"""The core names no adapter: the adapter packages declare their LLM wrappers as entry
points, and `as_llm` finds them by the framework object's package. Real LangChain and
LlamaIndex fake models (shipped by the frameworks), each in a fresh interpreter that
imported only the framework."""

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from rmm_core.models.llm import ADAPTER_GROUP, as_llm, register_llm_adapter

CORE = Path(__file__).resolve().parents[2] / "core"


def test_core_never_names_an_adapter_package():
    named = [str(p.relative_to(CORE)) for p in CORE.rglob("*.py")
             if "langchain_rmm" in p.read_text() or "llamaindex_rmm" in p.read_text()]
    assert named == []


def test_the_adapters_declare_their_wrappers():
    declared = {ep.name: ep.value for ep in entry_points(group=ADAPTER_GROUP)}
    assert declared["langchain_core"] == "langchain_rmm.llm:wrap_llm"
    assert declared["llama_index"] == "llamaindex_rmm.llm:wrap_llm"


@pytest.mark.parametrize("setup, expected", [
    ("from langchain_core.language_models.fake_chat_models import FakeListChatModel\n"
     "model = FakeListChatModel(responses=['Paris'])", "ChatModelLLM"),
    ("from llama_index.core.llms.mock import MockLLM\nmodel = MockLLM(max_tokens=3)",
     "LlamaIndexLLM"),
])
def test_a_framework_model_works_when_only_the_framework_was_imported(setup, expected):
    code = (f"{setup}\nfrom rmm_core import ReflectiveMemory\n"
            "import sys\nassert not any(m.endswith('_rmm') for m in sys.modules)\n"
            "from rmm_core.models.llm import metered\nllm = metered(model)\n"
            "print(type(llm.llm).__name__, bool(llm.complete('capital of France?')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == [expected, "True"]


def test_a_registered_adapter_wraps_its_package_objects():
    class Wrapped:
        def __init__(self, obj):
            self.obj = obj

        def complete(self, prompt: str) -> str:
            return "wrapped"

    Foreign = type("Foreign", (), {"__module__": "someframework.models"})
    register_llm_adapter("someframework", Wrapped)
    llm = as_llm(Foreign())
    assert isinstance(llm, Wrapped)
    assert llm.complete("x") == "wrapped"
