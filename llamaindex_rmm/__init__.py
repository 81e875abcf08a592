"""LlamaIndex adapters for rmm_core: chat memory, memory block, node postprocessor, LLM."""

from .block import RMMMemoryBlock
from .converters import hits_to_nodes
from .llm import wrap_llm
from .memory import RMMMemory
from .postprocessor import RMMReranker
from .tools import memory_tools
from .workflows import WorkflowAgentHook

__all__ = ["RMMMemory", "RMMMemoryBlock", "RMMReranker", "hits_to_nodes", "memory_tools",
           "WorkflowAgentHook", "wrap_llm"]
