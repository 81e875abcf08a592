"""Commit subjects stay readable: at most 72 characters, a body for the details.

Checks the commits since the last tag, or since this check was added, at most the last 20
(older history predates the rule). Exits 1 naming each offending commit.
"""

from __future__ import annotations

import subprocess
import sys

LIMIT, LAST = 72, 20


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def checked_span() -> str | None:
    """The commits the rule applies to: since the last tag, else since the commit that added
    this file (None: not committed yet)."""
    tag = subprocess.run(["git", "describe", "--tags", "--abbrev=0"], capture_output=True,
                         text=True)
    if tag.returncode == 0:
        return f"{tag.stdout.strip()}..HEAD"
    added = git("log", "--diff-filter=A", "--format=%H", "--", "scripts/check_commits.py").split()
    if not added:
        return None
    has_parent = subprocess.run(["git", "rev-parse", "-q", "--verify", f"{added[-1]}^"],
                                capture_output=True).returncode == 0
    return f"{added[-1]}^..HEAD" if has_parent else "HEAD"


def main() -> int:
    span = checked_span()
    if span is None:
        return 0
    log = git("log", f"-{LAST}", "--format=%h%x00%s", span)
    bad = [line.split("\0") for line in log.splitlines()
           if len(line.split("\0", 1)[1]) > LIMIT]
    for sha, subject in bad:
        print(f"{sha}: subject has {len(subject)} characters (limit {LIMIT}): {subject[:80]}...")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
