"""Retrospective reflection: citations of an answer, the REINFORCE reranker."""
