"""Agent memory options: MemGPT working context and tools, Agent Workflow Memory, A-MEM
notes."""
