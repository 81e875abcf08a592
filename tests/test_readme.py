"""The README's configuration reference names every `MemoryConfig` option."""

from __future__ import annotations

from pathlib import Path

from rmm_core import MemoryConfig

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_config_option_is_documented():
    missing = [name for name in MemoryConfig.model_fields if f"`{name}`" not in README]
    assert not missing, f"add these options to the README's configuration table: {missing}"
