"""Validated settings of a ReflectiveMemory; every field has a working default."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class MemoryConfig(BaseModel):
    """What can be tuned without writing code. Unknown keys are an error, not ignored."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    embedding_model: str | None = Field(
        None, description="Local path of a sentence-transformers model; None = packaged MiniLM.")
    candidates: int = Field(20, ge=1, le=1000,
                            description="Top-K retrieved before reranking keeps k (RMM's K).")
    dense_weight: float = Field(0.5, ge=0.0, le=1.0,
                                description="Share of the dense cosine in the fused score.")
    segment_window: int = Field(2, ge=1, le=10, description="Turns each side of a gap.")
    segment_cutoff: float = Field(0.0, ge=-3.0, le=3.0,
                                  description="Gap depth threshold in std above the mean.")
    segment_min_turns: int = Field(2, ge=1, le=50)
    segment_max_turns: int = Field(8, ge=1, le=200)
    turn_vectors: bool = Field(True, description="Index every turn's vector, not only the key's.")
    merge_threshold: float = Field(0.92, ge=0.0, le=1.0,
                                   description="Cosine above which LLM-free reconcile merges.")
    session_idle_timeout: float | None = Field(
        1800.0, gt=0, description="Seconds without a turn after which a session is reflected.")
    session_max_turns: int | None = Field(
        200, ge=1, description="Unreflected turns that trigger reflection of an open session.")
    context_dates: bool = Field(True, description="Prefix each hit's text with its date.")
    progress: bool | None = Field(None, description="tqdm bars for bulk ingest; None = on a TTY.")
    reranker_scope: Literal["global", "user"] = "global"
