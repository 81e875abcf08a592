"""Retrieval: BM25 + dense search fused, hit scores and text, immediate recall of open
turns, SCM's gate and context builder, A-MEM link following."""
