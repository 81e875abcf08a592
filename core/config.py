"""Validated settings of a ReflectiveMemory; every field has a working default."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .types import MAX_TEXT_CHARS


class MemoryConfig(BaseModel):
    """What can be tuned without writing code. Unknown keys are an error, not ignored."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    embedding_model: str | None = Field(
        None, description="'minilm-int8' (default when None: the packaged MiniLM on OpenVINO "
                          "if the `openvino` extra is installed, else on onnxruntime), "
                          "'minilm-int8-onnx' or 'minilm-int8-openvino' (one runtime), 'minilm' "
                          "(the float model, `torch` extra), or a local sentence-transformers "
                          "path.")
    candidates: int = Field(20, ge=1, le=1000,
                            description="Top-K retrieved before reranking keeps k (RMM's K).")
    max_query_chars: int = Field(
        10_000, ge=1, le=MAX_TEXT_CHARS,
        description="Queries are cut to this many characters (the embedder reads only the "
                    "first 256 word pieces, about 1,000 characters of English).")
    lexical_weight: float = Field(1.0, ge=0.0, le=10.0,
                                  description="Weight of BM25 (z-scored) in the fused score.")
    dense_weight: float = Field(1.0, ge=0.0, le=10.0,
                                description="Weight of the memory-vector cosine (z-scored).")
    turn_weight: float = Field(0.5, ge=0.0, le=10.0,
                               description="Weight of the best turn-vector cosine (z-scored).")
    neighbour_smoothing: float = Field(
        0.25, ge=0.0, le=1.0, description="Share of the same-session neighbours' scores added.")
    assistant_weight: float = Field(
        1.0, ge=0.0, le=100.0,
        description="Subtracted (in standard deviations of the fused score) from memories "
                    "that only the assistant wrote: in a user-assistant chat the facts about "
                    "the user are in the user's own words; the assistant's answers still rank, "
                    "below the user's words on the same subject.")
    assistant_speakers: list[str] = Field(
        ["assistant"], description="Speaker names of the assistant side (case-insensitive); "
                                   "the adapters log AI messages as 'assistant'.")
    segment_window: int = Field(2, ge=1, le=10, description="Turns each side of a gap.")
    segment_cutoff: float = Field(0.5, ge=-3.0, le=3.0,
                                  description="Gap depth threshold in std above the mean.")
    segment_min_turns: int = Field(2, ge=1, le=50, description="Fewest turns of a segment.")
    segment_max_turns: int = Field(8, ge=1, le=200, description="Most turns of a segment.")
    turn_vectors: bool = Field(True, description="Index every turn's vector, not only the key's.")
    memory_vector: Literal["text", "turns_mean"] = Field(
        "turns_mean", description="A raw-turn memory's own vector: its text encoded, or the "
                                  "mean of its turns' vectors (half the ingest cost).")
    max_hit_words: int = Field(
        150, ge=10, le=100_000,
        description="Most words of a hit's text (date included): LLM-free units are cut to "
                    "fit, long turns into passages of whole sentences.")
    merge_threshold: float = Field(0.92, ge=0.0, le=1.0,
                                   description="Cosine above which LLM-free reconcile merges.")
    session_idle_timeout: float | None = Field(
        1800.0, gt=0, description="Seconds without a turn after which a session is reflected.")
    session_max_turns: int | None = Field(
        200, ge=1, description="Unreflected turns that trigger reflection of an open session.")
    context_dates: bool = Field(True, description="Prefix each hit's text with its date.")
    supersession: bool = Field(
        True, description="Find, when memories are written, the earlier ones they change (a "
                          "move, a rescheduled meeting, a quit job) or contradict; superseded "
                          "ones rank below their successor and say so in their text.")
    background_reflection: bool = Field(
        False, description="A daemon thread (started by open, stopped by close) reflects "
                           "ended and idle sessions; requests then never reflect idle ones.")
    reflection_interval: float = Field(
        10.0, gt=0, le=3600, description="Seconds between the background worker's sweeps.")
    immediate_recall: bool = Field(
        True, description="Search also returns turns not yet reflected, as provisional hits "
                          "(id `turn:<turn id>`, attrs['provisional']).")
    search_backend: Literal["auto", "process", "database"] = Field(
        "auto", description="Where search runs: 'process' (an index of each user's bank in "
                            "this process), 'database' (PostgreSQL: pgvector HNSW and full-text "
                            "search in the server, nothing loaded), 'auto' (the database for "
                            "banks of 20,000 memories or more on PostgreSQL, else in process).")
    synchronous: Literal["NORMAL", "FULL"] = Field(
        "NORMAL", description="SQLite durability: NORMAL survives a process crash, FULL a "
                              "power loss too (slower commits). PostgreSQL: the server's own.")
    progress: bool | None = Field(None, description="tqdm bars for bulk ingest; None = on a TTY.")
    reranker: str = Field(
        "features", description="features (the hand-set fusion plus learned weights over a "
                                "15 retrieval and memory signals) | rmm (the paper's "
                                "bilinear maps over embeddings) | none (the hand-set fusion "
                                "alone; feedback records nothing).")
    reranker_weights: str | None = Field(
        "shipped", description="Where reranker='features' starts, in every scope: 'shipped' "
                               "(pre-trained weights packaged with the library), None (zero: "
                               "the hand-set fusion) or the path of a weights file written by "
                               "`rmm bench rerank --save-weights`.")
    reranker_scope: Literal["global", "user"] = Field(
        "global", description="One reranker learnt from every user's feedback, or one per user.")
    reranker_learning_rate: float | None = Field(
        None, gt=0, le=1.0, description="REINFORCE step size; None = the reranker's own "
                                        "(features 1e-2, rmm 1e-3).")
    reranker_baseline: float = Field(0.5, ge=-1.0, le=1.0,
                                     description="REINFORCE baseline b of reranker='rmm' "
                                                 "('features' uses the mean reward of each "
                                                 "result's picks).")
    reranker_temperature: float = Field(0.5, gt=0, le=100.0,
                                        description="Softmax temperature of exploration.")
    reranker_seed: int | None = Field(None, description="Seed of the exploration noise, for "
                                                        "reproducible runs; None = fresh.")
    reranker_combine: str = Field("zscore", description="How the reranker joins the fused "
                                                        "score: zscore | residual | blend | "
                                                        "reranker.")
    reranker_mix: float = Field(10.0, ge=0.0, le=1000.0,
                                description="Weight of the reranker's learned score.")
    reranker_batch: int = Field(1, ge=1, le=10_000,
                                description="Feedback examples per persisted reranker step.")
    reranker_cache_bytes: int = Field(
        64 * 2**20, ge=0, description="Deprecated (use cache_bytes): when changed from its "
                                      "default, it caps the one cache too.")
    cache_bytes: int = Field(
        2**30, ge=0, description="Memory for what is cached per user, in one least-recently-"
                                 "used budget: search indexes (~6.5 KB per memory at 384 "
                                 "dimensions and 2 turn vectors) and reranker weights (scope "
                                 "'user': ~1.2 MB per trained user); evicted ones are read "
                                 "again when needed.")
    segmentation: str | None = Field(
        None, description="embedding | fixed | llm | incremental; None = llm with an LLM, "
                          "else embedding.")
    extraction: str | None = Field(None, description="segment | llm; None = llm with an LLM.")
    compression: str | None = Field(None, description="filler | identity | llmlingua.")
    reconciliation: str | None = Field(None, description="threshold | llm; None = llm with an "
                                                         "LLM.")
    llmlingua_model_path: str | None = Field(
        None, description="Local folder of an LLMLingua-2 model (compression='llmlingua').")
    llm_timeout: float | None = Field(120.0, gt=0, description="Seconds allowed per LLM call.")
    llm_workers: int = Field(4, ge=1, le=256, description="LLM calls running at once; while "
                                                         "this many are stuck past "
                                                         "llm_timeout, new calls fail at once.")
    reflection_max_attempts: int = Field(
        3, ge=1, le=100, description="Failed reflections after which the background sweep "
                                     "leaves a session alone (end_session still retries).")
    reflection_retry_delay: float = Field(
        60.0, ge=0, description="Seconds before the sweep retries a failed reflection; "
                                "doubles with each failure.")
    notes: bool = Field(False, description="A-MEM notes: keywords, tags, context and links "
                                           "on each memory after reflection.")
    notes_in_key: bool = Field(False, description="Add a note's keywords, tags and context to "
                                                  "its memory's retrieval key.")
    note_links: int = Field(3, ge=0, le=50, description="Most neighbours a new note links to.")
    note_link_threshold: float = Field(
        0.5, ge=-1.0, le=1.0, description="Key cosine a neighbour needs for an LLM-free link.")
    note_follow: int = Field(1, ge=1, le=20, description="Linked memories added per hit when "
                                                        "search follows links.")
    hit_excerpts: bool = Field(
        True, description="Cut hits after the first two to what bears on the query: a "
                          "memory's lines by the speakers the query names and, past 60 words "
                          "(30 for a query asking for a list, a count, an order or a "
                          "summary), its sentences sharing most of the query's words; "
                          "`hit.refs` then name only the turns the hit still carries words "
                          "of.")


def unit_words(config: MemoryConfig) -> int:
    """Words an LLM-free memory's text may hold so its hit fits `max_hit_words` with the
    date prefix (three words: `[8 May 2023]`)."""
    return config.max_hit_words - 3


def cache_budget(config: MemoryConfig) -> int:
    """`cache_bytes`, capped by the deprecated `reranker_cache_bytes` when that was changed."""
    default = MemoryConfig.model_fields["reranker_cache_bytes"].default
    if config.reranker_cache_bytes != default:
        return min(config.cache_bytes, config.reranker_cache_bytes)
    return config.cache_bytes


DEFAULT_UNIT_WORDS = unit_words(MemoryConfig())
"""`unit_words` of the default settings: LLM stages built outside a pipeline use it."""
