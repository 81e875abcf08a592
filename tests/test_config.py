"""`MemoryConfig`'s nested shape: dotted names, the flat names of earlier releases (accepted
with a warning naming the new place), registry choices and unknown keys."""

from __future__ import annotations

import typing
import warnings

import pytest
from pydantic import ValidationError

from rmm_core import MemoryConfig, ReflectiveMemory
from rmm_core.bench.retrieval import parse_setting
from rmm_core.config import (
    FLAT_NAMES,
    Compression,
    Extraction,
    Reconciliation,
    RerankerCombine,
    RerankerKind,
    SearchConfig,
    Segmentation,
    cache_budget,
)
from rmm_core.models.embed import HashEmbedder

OLD_VALUES: dict[str, typing.Any] = {
    "embedding_model": "minilm", "turn_vectors": False, "memory_vector": "text",
    "candidates": 40, "max_query_chars": 500, "max_hit_words": 60, "context_dates": False,
    "immediate_recall": False, "search_backend": "database",
    "lexical_weight": 2.0, "dense_weight": 0.5, "turn_weight": 0.0, "neighbour_smoothing": 0.1,
    "assistant_weight": 3.0, "assistant_speakers": ["bot", "ai"],
    "segmentation": "fixed", "segment_window": 3, "segment_cutoff": 1.0,
    "segment_min_turns": 1, "segment_max_turns": 12,
    "extraction": "segment", "compression": "identity", "reconciliation": "threshold",
    "merge_threshold": 0.8, "llmlingua_model_path": "/models/llmlingua", "llm_timeout": 5.0,
    "llm_workers": 2,
    "session_idle_timeout": 60.0, "session_max_turns": 10, "background_reflection": True,
    "reflection_interval": 1.0, "reflection_max_attempts": 5, "reflection_retry_delay": 0.0,
    "reranker": "rmm", "reranker_weights": None, "reranker_scope": "user",
    "reranker_learning_rate": 0.1, "reranker_baseline": 0.0, "reranker_temperature": 2.0,
    "reranker_seed": 7, "reranker_combine": "blend", "reranker_mix": 0.5, "reranker_batch": 4,
    "reranker_cache_bytes": 2**20,
    "notes": True, "notes_in_key": True, "note_links": 5, "note_link_threshold": 0.2,
    "note_follow": 2,
    "synchronous": "FULL", "cache_bytes": 2**20,
}
"""A valid value, other than the default, of every flat name of earlier releases."""


def at(config: MemoryConfig, dotted: str) -> typing.Any:
    group, field = dotted.split(".")
    return getattr(getattr(config, group), field)


def test_every_old_name_has_a_test_value_and_a_new_place():
    assert sorted(OLD_VALUES) == sorted(FLAT_NAMES)
    defaults = MemoryConfig()
    for old, new in FLAT_NAMES.items():
        assert at(defaults, new) != OLD_VALUES[old], f"{old}: pick a value that is not the default"


@pytest.mark.parametrize("old", sorted(FLAT_NAMES))
def test_an_old_flat_name_still_works_and_warns_with_its_new_name(old):
    new, value = FLAT_NAMES[old], OLD_VALUES[old]
    with pytest.warns(DeprecationWarning, match=f"'{old}' is deprecated; use '{new}'") as seen:
        config = MemoryConfig(**{old: value})
    assert at(config, new) == value
    assert seen[0].filename == __file__  # points at the caller, not at pydantic
    with pytest.warns(DeprecationWarning, match=f"'{new}'"):
        assert at(MemoryConfig.model_validate({old: value}), new) == value
    with pytest.warns(DeprecationWarning, match=f"'{new}'"):
        assert parse_setting(f"{old}={value if isinstance(value, str) else _json(value)}") \
            == (new, value)
    if old not in MemoryConfig.model_fields:  # `reranker`, `notes`: now the group itself
        with pytest.warns(DeprecationWarning, match=f"read config.{new}"):
            assert getattr(config, old) == value  # the old attribute read, deprecated
    fresh = MemoryConfig()
    with pytest.warns(DeprecationWarning, match=f"set config.{new}"):
        setattr(fresh, old, value)  # and the old attribute write
    assert at(fresh, new) == value


def _json(value: typing.Any) -> str:
    import json

    return json.dumps(value)


def test_a_stored_flat_config_loads_as_the_nested_one():
    """A whole flat dump as an earlier release wrote it (`model_dump()`) loads unchanged."""
    with pytest.warns(DeprecationWarning):
        config = MemoryConfig.model_validate(dict(OLD_VALUES, supersession=False))
    assert all(at(config, new) == OLD_VALUES[old] for old, new in FLAT_NAMES.items())
    assert config.supersession is False
    assert MemoryConfig.model_validate(config.model_dump()) == config  # the new shape round-trips


def test_dotted_and_group_names_set_the_same_field_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dotted = MemoryConfig(**{"reranker.kind": "rmm", "search.candidates": 40})
        grouped = MemoryConfig(reranker={"kind": "rmm"}, search={"candidates": 40})
    assert dotted == grouped
    assert (dotted.reranker.kind, dotted.search.candidates) == ("rmm", 40)
    assert parse_setting("reranker.kind=rmm") == ("reranker.kind", "rmm")
    assert parse_setting("search.candidates=40") == ("search.candidates", 40)


def test_updated_merges_into_groups_instead_of_replacing_them():
    base = MemoryConfig(reranker={"kind": "rmm", "seed": 3})
    new = base.updated(reranker={"scope": "user"}, **{"search.candidates": 5})
    assert (new.reranker.kind, new.reranker.seed, new.reranker.scope) == ("rmm", 3, "user")
    assert new.search.candidates == 5
    assert base.search.candidates == 20


def test_open_takes_groups_dotted_and_old_names_over_a_config():
    config = MemoryConfig(search={"candidates": 30})
    with pytest.warns(DeprecationWarning, match="'fusion.turn_weight'") as seen:
        mem = ReflectiveMemory.open(":memory:", embedder=HashEmbedder(), config=config,
                                    reranker={"kind": "none"}, turn_weight=0.0,
                                    **{"search.max_hit_words": 80})
    [renamed] = [w for w in seen if "'fusion.turn_weight'" in str(w.message)]
    assert renamed.filename == __file__  # points at the caller's line
    with mem:
        assert (mem.config.search.candidates, mem.config.search.max_hit_words) == (30, 80)
        assert (mem.config.reranker.kind, mem.config.fusion.turn_weight) == ("none", 0.0)
    with pytest.warns(DeprecationWarning, match="'search.candidates'"):  # a stored flat dict
        mem = ReflectiveMemory.open(":memory:", embedder=HashEmbedder(),
                                    config={"candidates": 7, "search.max_hit_words": 90})
    with mem:
        assert (mem.config.search.candidates, mem.config.search.max_hit_words) == (7, 90)


@pytest.mark.parametrize("settings, where", [
    ({"candiates": 10}, "candiates"),
    ({"search.candiates": 10}, "search.candiates"),
    ({"serach.candidates": 10}, "serach"),
    ({"search": {"candiates": 10}}, "search.candiates"),
])
def test_unknown_keys_are_an_error_naming_the_key(settings, where):
    with pytest.raises(ValidationError, match=f"{where}\n  Extra inputs are not permitted"):
        MemoryConfig(**settings)


@pytest.mark.parametrize("setting, choices, registry", [
    ("segmentation.kind", Segmentation, ("rmm_core.write.pipeline", "STAGES", "segmentation")),
    ("stages.extraction", Extraction, ("rmm_core.write.pipeline", "STAGES", "extraction")),
    ("stages.compression", Compression, ("rmm_core.write.pipeline", "STAGES", "compression")),
    ("stages.reconciliation", Reconciliation,
     ("rmm_core.write.pipeline", "STAGES", "reconciliation")),
    ("reranker.kind", RerankerKind, ("rmm_core.learn.rerank", "RERANKERS", None)),
    ("reranker.combine", RerankerCombine, ("rmm_core.learn.rerank_bilinear", "COMBINE", None)),
])
def test_registry_choices_match_their_registry_and_name_the_allowed_values(setting, choices,
                                                                          registry):
    import importlib

    module, name, key = registry
    table = getattr(importlib.import_module(module), name)
    keys = table[key] if key else table
    assert sorted(typing.get_args(choices)) == sorted(keys)
    with pytest.raises(ValidationError, match=" or ".join(f"'{c}'" for c in
                                                           typing.get_args(choices)[-2:])):
        MemoryConfig(**{setting: "magic"})


def test_importing_the_config_loads_no_stage_or_reranker_module():
    import subprocess
    import sys

    code = ("import sys, rmm_core.config; "
            "print(sorted(m for m in sys.modules if m.startswith(('rmm_core.write', "
            "'rmm_core.learn', 'numpy', 'torch'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_the_deprecated_reranker_cache_bytes_still_caps_the_one_cache():
    assert cache_budget(MemoryConfig()) == MemoryConfig().storage.cache_bytes
    assert cache_budget(MemoryConfig(reranker={"cache_bytes": 2**20})) == 2**20
    assert cache_budget(MemoryConfig(reranker={"cache_bytes": 2**20},
                                     storage={"cache_bytes": 2**10})) == 2**10


def test_the_top_level_reads_at_a_glance():
    assert len(MemoryConfig.model_fields) <= 12


def test_assigning_a_field_keeps_every_group_a_model():
    config = MemoryConfig(search={"candidates": 4})
    config.supersession = False
    config.reranker = {"kind": "rmm"}
    config.fusion.turn_weight = 0.0
    assert isinstance(config.search, SearchConfig)
    assert config.search.candidates == 4
    assert (config.reranker.kind, config.fusion.turn_weight) == ("rmm", 0.0)
    with pytest.raises(ValidationError):
        config.search.candidates = 0
