"""The results file of `rmm bench answer`: one JSON line per question and context, written as
each is graded, so that a run killed halfway continues where it stopped.

The first line describes the run (dataset, reader, judge, budget, ...); a rerun into the same
file must describe the same run, or it would mix figures of two setups. A last line cut off
by the kill is dropped; a malformed line elsewhere is an error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError


class Results:
    """Graded records by key (question and context), appended to `path` when one is given."""

    def __init__(self, path: str | Path | None, run: dict[str, Any]) -> None:
        self.path = Path(path) if path else None
        self.run = run
        self.records: dict[str, dict[str, Any]] = {}
        if self.path is not None and self.path.exists() and self.path.stat().st_size:
            self._load()
        elif self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._append({"run": run})

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def add(self, key: str, record: dict[str, Any]) -> None:
        """Keep `record` and append it to the file at once (flushed to disk)."""
        record = {"key": key, **record}
        self.records[key] = record
        if self.path is not None:
            self._append(record)

    def _append(self, record: dict[str, Any]) -> None:
        assert self.path is not None
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
            out.flush()
            os.fsync(out.fileno())

    def _load(self) -> None:
        assert self.path is not None
        lines = self.path.read_text(encoding="utf-8").split("\n")
        complete = lines[-1] == ""
        parsed = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                parsed.append(json.loads(line))
            except json.JSONDecodeError:
                if number == len(lines) and not complete:
                    self._drop_last_line(len(line.encode()))
                    break
                raise InvalidInputError(f"{self.path}: line {number} is not JSON; not a "
                                        f"results file of rmm bench answer?") from None
        if not parsed or "run" not in parsed[0]:
            raise InvalidInputError(f"{self.path} does not start with a run line; not a "
                                    f"results file of rmm bench answer?")
        before = parsed[0]["run"]
        changed = sorted(k for k in set(before) | set(self.run) if before.get(k) !=
                         self.run.get(k))
        if changed:
            raise InvalidInputError(
                f"{self.path} holds a run with other settings ({', '.join(changed)}: "
                f"{[before.get(k) for k in changed]} there, {[self.run.get(k) for k in changed]}"
                f" now); give another --results file to start afresh")
        for record in parsed[1:]:
            self.records[record["key"]] = record

    def _drop_last_line(self, size: int) -> None:
        """Cut a partial last line (the kill came mid-write) so that appending starts clean."""
        assert self.path is not None
        with self.path.open("r+b") as out:
            out.truncate(self.path.stat().st_size - size)
