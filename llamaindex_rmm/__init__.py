"""LlamaIndex adapters for rmm_core."""
