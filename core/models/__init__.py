"""The models the library calls: the LLM interface and its prompts and parsing, the
embedder, a local test LLM."""
