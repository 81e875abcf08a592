"""LangChain adapters for rmm_core."""
