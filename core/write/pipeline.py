"""Building the write path from settings: a registry of stage implementations per stage.

With no LLM every stage defaults to its LLM-free form; with one, segmentation, extraction
and reconciliation default to the papers' LLM forms (at most 3 calls per session).
Each choice can be set alone, e.g. LLM extraction over TextTiling segments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..config import MemoryConfig, unit_words
from ..errors import InvalidInputError
from ..models.llm import metered as metered_llm
from .compress import Compressor, FillerCompressor, IdentityCompressor, LLMLinguaCompressor
from .extract import Extractor, LLMExtractor, SegmentExtractor
from .reconcile import LLMReconciler, Reconciler, ThresholdReconciler
from .reflect import Pipeline
from .segment import (
    EmbeddingSegmenter,
    FixedSegmenter,
    IncrementalLLMSegmenter,
    LLMSegmenter,
    Segmenter,
)

Factory = Callable[[MemoryConfig, Any], Any]


def _embedding(c: MemoryConfig, llm: Any) -> EmbeddingSegmenter:
    return EmbeddingSegmenter(window=c.segmentation.window, cutoff=c.segmentation.cutoff,
                              min_turns=c.segmentation.min_turns,
                              max_turns=c.segmentation.max_turns)


def _threshold(c: MemoryConfig) -> ThresholdReconciler:
    return ThresholdReconciler(c.stages.merge_threshold, max_words=unit_words(c))


def _llmlingua(c: MemoryConfig, llm: Any) -> LLMLinguaCompressor:
    if not c.stages.llmlingua_model_path:
        raise InvalidInputError('stages.compression="llmlingua" needs stages.llmlingua_model_path, '
                                'the local folder of an LLMLingua-2 model')
    return LLMLinguaCompressor(c.stages.llmlingua_model_path)


STAGES: dict[str, dict[str, Factory]] = {
    "segmentation": {
        "embedding": _embedding,
        "fixed": lambda c, llm: FixedSegmenter(c.segmentation.max_turns),
        "llm": lambda c, llm: LLMSegmenter(llm, _embedding(c, llm)),
        "incremental": lambda c, llm: IncrementalLLMSegmenter(
            llm, _embedding(c, llm), max_turns=c.segmentation.max_turns),
    },
    "extraction": {
        "segment": lambda c, llm: SegmentExtractor(),
        "llm": lambda c, llm: LLMExtractor(llm, SegmentExtractor(), max_words=unit_words(c)),
    },
    "compression": {
        "filler": lambda c, llm: FillerCompressor(),
        "identity": lambda c, llm: IdentityCompressor(),
        "llmlingua": _llmlingua,
    },
    "reconciliation": {
        "threshold": lambda c, llm: _threshold(c),
        "llm": lambda c, llm: LLMReconciler(llm, _threshold(c), max_words=unit_words(c)),
    },
}
"""Stage -> implementation name -> factory(config, metered llm or None)."""

NEEDS_LLM = {"llm", "incremental"}
DEFAULTS = {
    False: {"segmentation": "embedding", "extraction": "segment", "compression": "filler",
            "reconciliation": "threshold"},
    True: {"segmentation": "llm", "extraction": "llm", "compression": "filler",
           "reconciliation": "llm"},
}
"""Implementation used when a stage's setting is None, without and with an LLM."""


def build_pipeline(config: MemoryConfig, llm: Any = None, *,
                   segmenter: Segmenter | None = None, extractor: Extractor | None = None,
                   compressor: Compressor | None = None,
                   reconciler: Reconciler | None = None) -> Pipeline:
    """The write path the settings ask for; `llm` is anything `as_llm` accepts (metered
    here unless it already is). A stage given replaces the one the settings would build."""
    metered = metered_llm(llm, config)
    setting = {"segmentation": "segmentation.kind", "extraction": "stages.extraction",
               "compression": "stages.compression", "reconciliation": "stages.reconciliation"}
    chosen = {}
    for stage, options in STAGES.items():
        group, field = setting[stage].split(".")
        name = getattr(getattr(config, group), field) or DEFAULTS[metered is not None][stage]
        if name not in options:
            raise InvalidInputError(f"unknown {stage} {name!r}; choose one of {sorted(options)}")
        if name in NEEDS_LLM and metered is None:
            raise InvalidInputError(f'{setting[stage]}="{name}" needs an LLM: pass llm= to '
                                    'open()')
        chosen[stage] = options[name](config, metered)
    pipeline = Pipeline(segmenter=chosen["segmentation"], extractor=chosen["extraction"],
                        compressor=chosen["compression"], reconciler=chosen["reconciliation"])
    for name, stage in (("segmenter", segmenter), ("extractor", extractor),
                        ("compressor", compressor), ("reconciler", reconciler)):
        if stage is not None:
            setattr(pipeline, name, stage)
    return pipeline
