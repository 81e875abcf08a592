"""Progress bars for the long commands (bench, export, import, reflect), on stderr.

Shown when stderr is a terminal; `RMM_PROGRESS=0` (or `rmm --no-progress`) turns them off,
`RMM_PROGRESS=1` on even when stderr is not a terminal (a log file, a CI job).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
ENV = "RMM_PROGRESS"
SWITCH = {"0": True, "false": True, "off": True, "no": True,
          "1": False, "true": False, "on": False, "yes": False}
"""`RMM_PROGRESS` value -> tqdm's `disable` (unset or anything else: None, on a terminal)."""


def progress(items: Iterable[T], *, desc: str, unit: str, total: int | None = None
             ) -> Iterator[T]:
    """`items`, with a tqdm bar as `RMM_PROGRESS` and the terminal decide."""
    from tqdm.auto import tqdm

    disable = SWITCH.get(os.environ.get(ENV, "").strip().lower())
    yield from tqdm(items, desc=desc, unit=unit, total=total, disable=disable, leave=False)
