"""The loader registry of `rmm bench retrieval`: dataset name -> reader of conversations."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import InvalidInputError
from .beam import load_beam
from .jsonl import load_jsonl
from .locomo import CATEGORY_NAMES, load_locomo
from .records import Conversation

Loader = Callable[[str | Path, list[int] | None], list[Conversation]]

LOADERS: dict[str, Loader] = {
    "locomo": load_locomo,  # the LoCoMo JSON file; questions of categories 1-4
    "beam": load_beam,  # a BEAM track directory (conversations 1, 2, ...) or one conversation
    "jsonl": load_jsonl,  # the generic JSON Lines format (see bench/jsonl.py, README)
}


def load(dataset: str, path: str | Path, select: list[int] | None = None) -> list[Conversation]:
    """The conversations of `path` read as `dataset`, at positions `select` (all when None)."""
    if dataset not in LOADERS:
        raise InvalidInputError(f"unknown dataset {dataset!r}; choose one of {sorted(LOADERS)}")
    return LOADERS[dataset](path, select)

CATEGORY_LABELS: dict[str, dict[str, str]] = {"locomo": CATEGORY_NAMES}
"""Dataset -> how its question categories are named in the figures (others: as they are)."""


def load_args(dataset: str, data: str, convs: list[int] | None) -> list[Conversation] | None:
    """`load` for a bench command: None, with the reason on stderr, when `data` cannot be
    read as `dataset`."""
    try:
        return load(dataset, data, convs)
    except (InvalidInputError, FileNotFoundError) as exc:
        print(f"rmm bench: cannot read {data} as {dataset}: {exc}", file=sys.stderr)
        return None
