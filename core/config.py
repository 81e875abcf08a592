"""Validated settings of a ReflectiveMemory, grouped by the part they tune; every field has a
working default.

The flat names of earlier releases (`candidates`, `reranker="rmm"`, ...) are still accepted
for one release, mapped to their group with a `DeprecationWarning` naming the new dotted name.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .types import MAX_TEXT_CHARS

# The registries' keys, spelt here so validating a setting imports no stage or reranker
# module; tests check each against its registry (`STAGES`, `RERANKERS`, `COMBINE`).
Segmentation = Literal["embedding", "fixed", "llm", "incremental"]
Extraction = Literal["segment", "llm"]
Compression = Literal["filler", "identity", "llmlingua"]
Reconciliation = Literal["threshold", "llm"]
RerankerKind = Literal["features", "rmm", "none"]
RerankerCombine = Literal["zscore", "residual", "blend", "reranker"]


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class EmbeddingConfig(_Group):
    """The embedding model and which vectors each memory is indexed by."""

    model: str | None = Field(
        None, description="None: the model the store was built with; a new store takes "
                          "'multilingual' when its first texts are not English and the "
                          "`multilingual` extra is installed, else 'minilm-int8'. "
                          "'minilm-int8': the packaged English MiniLM on OpenVINO if the "
                          "`openvino` extra is installed, else on onnxruntime; "
                          "'minilm-int8-onnx' or 'minilm-int8-openvino' (one runtime), 'minilm' "
                          "(the float model, `torch` extra), 'multilingual' "
                          "(multilingual-e5-small in 4 bits, `multilingual` extra), or a local "
                          "sentence-transformers path.")
    turn_vectors: bool = Field(True, description="Index every turn's vector, not only the key's.")
    memory_vector: Literal["text", "turns_mean"] = Field(
        "turns_mean", description="A raw-turn memory's own vector: its text encoded, or the "
                                  "mean of its turns' vectors (half the ingest cost).")


class SearchConfig(_Group):
    """What a search retrieves, where it runs and what each hit holds."""

    candidates: int = Field(
        20, ge=1, le=1000,
        description="The window reranked and arranged by the read steps (RMM's K; five "
                    "times as many for a query that gathers), whatever k or max_words a "
                    "search asks for; deeper hits follow in retrieval order.")
    max_query_chars: int = Field(
        10_000, ge=1, le=MAX_TEXT_CHARS,
        description="Queries are cut to this many characters (the embedder reads only the "
                    "first 256 word pieces, about 1,000 characters of English).")
    max_hit_words: int = Field(
        150, ge=10, le=100_000,
        description="Most words of a hit's text (date included): LLM-free units are cut to "
                    "fit, long turns into passages of whole sentences.")
    context_dates: bool = Field(True, description="Prefix each hit's text with its date.")
    excerpts: bool = Field(
        True, description="Cut hits after the first two to what bears on the query: a "
                          "memory's lines by the speakers the query names and, past 60 words "
                          "(30 for a query asking for a list, a count, an order, a "
                          "summary or a judgement), its sentences sharing most of the "
                          "query's words; `hit.refs` then name only the turns the hit still "
                          "carries words of. A gathering query's later hits that only "
                          "repeat turns go after those that add one; for a judgement "
                          "('Would Ana enjoy...?'), those with the most common words go "
                          "last.")
    immediate_recall: bool = Field(
        True, description="Search also returns turns not yet reflected, as provisional hits "
                          "(id `turn:<turn id>`, attrs['provisional']).")
    backend: Literal["auto", "process", "database"] = Field(
        "auto", description="Where search runs: 'process' (an index of each user's bank in "
                            "this process), 'database' (PostgreSQL: pgvector HNSW and full-text "
                            "search in the server, nothing loaded), 'auto' (the database for "
                            "banks of 20,000 memories or more on PostgreSQL, else in process).")


class FusionConfig(_Group):
    """The hand-set fusion of the retrievers' scores, before any learned reranker."""

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


class SegmentationConfig(_Group):
    """How a session's turns are cut into topical segments."""

    kind: Segmentation | None = Field(
        None, description="embedding | fixed | llm | incremental; None = llm with an LLM, "
                          "else embedding.")
    window: int = Field(2, ge=1, le=10, description="Turns each side of a gap.")
    cutoff: float = Field(0.5, ge=-3.0, le=3.0,
                          description="Gap depth threshold in std above the mean.")
    min_turns: int = Field(2, ge=1, le=50, description="Fewest turns of a segment.")
    max_turns: int = Field(8, ge=1, le=200, description="Most turns of a segment.")


class StagesConfig(_Group):
    """The reflection stages after segmentation, and the LLM calls they make."""

    extraction: Extraction | None = Field(None, description="segment | llm; None = llm with "
                                                            "an LLM.")
    compression: Compression | None = Field(None, description="filler | identity | llmlingua.")
    reconciliation: Reconciliation | None = Field(None, description="threshold | llm; None = "
                                                                    "llm with an LLM.")
    merge_threshold: float = Field(0.92, ge=0.0, le=1.0,
                                   description="Cosine above which LLM-free reconcile merges.")
    judge_changes: bool = Field(
        False, description="With an LLM: one more call per batch of written memories decides "
                           "which pairs the supersession rules propose (sure or not) and "
                           "which of each new memory's nearest earlier ones are changes; its "
                           "verdicts replace the read-time guess of versions (needs "
                           "supersession).")
    llmlingua_model_path: str | None = Field(
        None, description="Local folder of an LLMLingua-2 model (stages.compression='llmlingua').")
    llm_timeout: float | None = Field(120.0, gt=0, description="Seconds allowed per LLM call.")
    llm_workers: int = Field(4, ge=1, le=256, description="LLM calls running at once; while "
                                                         "this many are stuck past "
                                                         "llm_timeout, new calls fail at once.")


class SessionsConfig(_Group):
    """When a session is reflected, in the foreground or by the background worker."""

    idle_timeout: float | None = Field(
        1800.0, gt=0, description="Seconds without a turn after which a session is reflected.")
    max_turns: int | None = Field(
        200, ge=1, description="Unreflected turns that trigger reflection of an open session.")
    background_reflection: bool = Field(
        False, description="A daemon thread (started by open, stopped by close) reflects "
                           "ended and idle sessions; requests then never reflect idle ones.")
    reflection_interval: float = Field(
        10.0, gt=0, le=3600, description="Seconds between the background worker's sweeps.")
    reflection_max_attempts: int = Field(
        3, ge=1, le=100, description="Failed reflections after which the background sweep "
                                     "leaves a session alone (end_session still retries).")
    reflection_retry_delay: float = Field(
        60.0, ge=0, description="Seconds before the sweep retries a failed reflection; "
                                "doubles with each failure.")


class RerankerConfig(_Group):
    """The reranker learnt from which memories the answers cite."""

    kind: RerankerKind = Field(
        "features", description="features (the hand-set fusion plus learned weights over a "
                                "15 retrieval and memory signals) | rmm (the paper's "
                                "bilinear maps over embeddings) | none (the hand-set fusion "
                                "alone; feedback records nothing).")
    weights: str | None = Field(
        "shipped", description="Where kind='features' starts, in every scope: 'shipped' "
                               "(pre-trained weights packaged with the library), None (zero: "
                               "the hand-set fusion) or the path of a weights file written by "
                               "`rmm bench rerank --save-weights`.")
    scope: Literal["global", "user"] = Field(
        "global", description="One reranker learnt from every user's feedback, or one per user.")
    learning_rate: float | None = Field(
        None, gt=0, le=1.0, description="REINFORCE step size; None = the reranker's own "
                                        "(features 1e-2, rmm 1e-3).")
    baseline: float = Field(0.5, ge=-1.0, le=1.0,
                            description="REINFORCE baseline b of kind='rmm' ('features' uses "
                                        "the mean reward of each result's picks).")
    temperature: float = Field(0.5, gt=0, le=100.0,
                               description="Softmax temperature of exploration.")
    seed: int | None = Field(None, description="Seed of the exploration noise, for "
                                               "reproducible runs; None = fresh.")
    combine: RerankerCombine = Field("zscore", description="How kind='rmm' joins the fused "
                                                           "score: zscore | residual | blend | "
                                                           "reranker.")
    mix: float = Field(10.0, ge=0.0, le=1000.0,
                       description="Weight of the reranker's learned score.")
    batch: int = Field(1, ge=1, le=10_000,
                       description="Feedback examples per persisted reranker step.")
    cache_bytes: int = Field(
        64 * 2**20, ge=0, description="Deprecated (use storage.cache_bytes): when changed from "
                                      "its default, it caps the one cache too.")


class NotesConfig(_Group):
    """A-MEM notes: keywords, tags, context and links written on each memory."""

    enabled: bool = Field(False, description="A-MEM notes: keywords, tags, context and links "
                                             "on each memory after reflection.")
    in_key: bool = Field(False, description="Add a note's keywords, tags and context to its "
                                            "memory's retrieval key.")
    links: int = Field(3, ge=0, le=50, description="Most neighbours a new note links to.")
    link_threshold: float = Field(
        0.5, ge=-1.0, le=1.0, description="Key cosine a neighbour needs for an LLM-free link.")
    follow: int = Field(1, ge=1, le=20, description="Linked memories added per hit when "
                                                   "search follows links.")


class StorageConfig(_Group):
    """How commits are made durable and how much is cached in this process."""

    synchronous: Literal["NORMAL", "FULL"] = Field(
        "NORMAL", description="SQLite durability: NORMAL survives a process crash, FULL a "
                              "power loss too (slower commits). PostgreSQL: the server's own.")
    cache_bytes: int = Field(
        2**30, ge=0, description="Memory for what is cached per user, in one least-recently-"
                                 "used budget: search indexes (~6.5 KB per memory at 384 "
                                 "dimensions and 2 turn vectors) and reranker weights (scope "
                                 "'user': ~1.2 MB per trained user); evicted ones are read "
                                 "again when needed.")


FLAT_NAMES: dict[str, str] = {
    "embedding_model": "embedding.model", "turn_vectors": "embedding.turn_vectors",
    "memory_vector": "embedding.memory_vector",
    "candidates": "search.candidates", "max_query_chars": "search.max_query_chars",
    "max_hit_words": "search.max_hit_words", "context_dates": "search.context_dates",
    "immediate_recall": "search.immediate_recall", "search_backend": "search.backend",
    "lexical_weight": "fusion.lexical_weight", "dense_weight": "fusion.dense_weight",
    "turn_weight": "fusion.turn_weight", "neighbour_smoothing": "fusion.neighbour_smoothing",
    "assistant_weight": "fusion.assistant_weight",
    "assistant_speakers": "fusion.assistant_speakers",
    "segmentation": "segmentation.kind", "segment_window": "segmentation.window",
    "segment_cutoff": "segmentation.cutoff", "segment_min_turns": "segmentation.min_turns",
    "segment_max_turns": "segmentation.max_turns",
    "extraction": "stages.extraction", "compression": "stages.compression",
    "reconciliation": "stages.reconciliation", "merge_threshold": "stages.merge_threshold",
    "llmlingua_model_path": "stages.llmlingua_model_path", "llm_timeout": "stages.llm_timeout",
    "llm_workers": "stages.llm_workers",
    "session_idle_timeout": "sessions.idle_timeout", "session_max_turns": "sessions.max_turns",
    "background_reflection": "sessions.background_reflection",
    "reflection_interval": "sessions.reflection_interval",
    "reflection_max_attempts": "sessions.reflection_max_attempts",
    "reflection_retry_delay": "sessions.reflection_retry_delay",
    "reranker": "reranker.kind", "reranker_weights": "reranker.weights",
    "reranker_scope": "reranker.scope", "reranker_learning_rate": "reranker.learning_rate",
    "reranker_baseline": "reranker.baseline", "reranker_temperature": "reranker.temperature",
    "reranker_seed": "reranker.seed", "reranker_combine": "reranker.combine",
    "reranker_mix": "reranker.mix", "reranker_batch": "reranker.batch",
    "reranker_cache_bytes": "reranker.cache_bytes",
    "notes": "notes.enabled", "notes_in_key": "notes.in_key", "note_links": "notes.links",
    "note_link_threshold": "notes.link_threshold", "note_follow": "notes.follow",
    "synchronous": "storage.synchronous", "cache_bytes": "storage.cache_bytes",
}
"""Each flat setting name of earlier releases -> its dotted name now."""


class MemoryConfig(BaseModel):
    """What can be tuned without writing code, one group per part. Unknown keys are an
    error, not ignored; a setting is also accepted by its dotted name (`reranker.kind`)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    fusion: FusionConfig = Field(default_factory=FusionConfig)
    segmentation: SegmentationConfig = Field(default_factory=SegmentationConfig)
    stages: StagesConfig = Field(default_factory=StagesConfig)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    reranker: RerankerConfig = Field(default_factory=RerankerConfig)
    notes: NotesConfig = Field(default_factory=NotesConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    supersession: bool = Field(
        True, description="Find, when memories are written, the earlier ones they change (a "
                          "move, a rescheduled meeting, a quit job) or contradict; superseded "
                          "ones rank below their successor and say so in their text.")
    progress: bool | None = Field(None, description="tqdm bars for bulk ingest; None = on a TTY.")

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, data: Any) -> Any:
        return nest(data, stacklevel=3) if isinstance(data, Mapping) else data

    def updated(self, **settings: Any) -> MemoryConfig:
        """A copy with `settings` (dotted, group or flat names) applied over these; a group
        given as a dict changes only the fields it names."""
        data = self.model_dump(exclude_unset=True)
        for group, value in nest(settings, stacklevel=2).items():
            held = data.get(group)
            data[group] = {**held, **value} if isinstance(held, dict) and \
                isinstance(value, dict) else value
        return MemoryConfig.model_validate(data)

    def __getattr__(self, name: str) -> Any:  # the flat reads of earlier releases
        path = FLAT_NAMES.get(name)
        if path is None or name in type(self).model_fields:
            return super().__getattr__(name)  # type: ignore[misc]
        warnings.warn(f"MemoryConfig.{name} is deprecated; read config.{path}",
                      DeprecationWarning, stacklevel=2)
        group, field = path.split(".")
        return getattr(getattr(self, group), field)

    def __setattr__(self, name: str, value: Any) -> None:  # the flat writes of earlier releases
        path = FLAT_NAMES.get(name)
        if path is None or name in type(self).model_fields and _is_group_value(value):
            return super().__setattr__(name, value)
        warnings.warn(f"MemoryConfig.{name} is deprecated; set config.{path}",
                      DeprecationWarning, stacklevel=2)
        group, field = path.split(".")
        setattr(getattr(self, group), field, value)


def _is_group_value(value: Any) -> bool:
    return isinstance(value, (Mapping, BaseModel))


def dotted_name(name: str, value: Any = None, *, stacklevel: int = 2) -> str:
    """The current name of setting `name`: dotted names and groups as they are, a flat name of
    earlier releases mapped to its dotted name with a `DeprecationWarning`."""
    if name in MemoryConfig.model_fields and (name not in FLAT_NAMES or _is_group_value(value)):
        return name
    if name in FLAT_NAMES:
        new = FLAT_NAMES[name]
        warnings.warn(f"setting {name!r} is deprecated; use {new!r}", DeprecationWarning,
                      stacklevel=stacklevel + 1)
        return new
    return name


def nest(settings: Mapping[str, Any], *, stacklevel: int = 2) -> dict[str, Any]:
    """`settings` in `MemoryConfig`'s nested shape: dotted and flat names go into their group,
    merged over what the same group already holds; unknown names pass through to be refused."""
    out: dict[str, Any] = {}
    for name, value in settings.items():
        path = dotted_name(name, value, stacklevel=stacklevel + 1)
        group, dot, field = path.partition(".")
        if not dot and (group not in out or not _is_group_value(value)):
            out[group] = value  # as given: a group model stays one (assignment passes them)
            continue
        held = _as_dict(out.get(group))
        if dot:
            held[field] = value
        else:
            held.update(_as_dict(value))
        out[group] = held
    return out


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_unset=True)
    return dict(value) if isinstance(value, Mapping) else {}


def unit_words(config: MemoryConfig) -> int:
    """Words an LLM-free memory's text may hold so its hit fits `search.max_hit_words` with
    the date prefix (three words: `[8 May 2023]`)."""
    return config.search.max_hit_words - 3


def cache_budget(config: MemoryConfig) -> int:
    """`storage.cache_bytes`, capped by the deprecated `reranker.cache_bytes` when that was
    changed."""
    default = RerankerConfig.model_fields["cache_bytes"].default
    if config.reranker.cache_bytes != default:
        return min(config.storage.cache_bytes, config.reranker.cache_bytes)
    return config.storage.cache_bytes


DEFAULT_UNIT_WORDS = unit_words(MemoryConfig())
"""`unit_words` of the default settings: LLM stages built outside a pipeline use it."""
