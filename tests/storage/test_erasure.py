"""Deleted text leaves every file of the store at once, while the store is still open.

Real SQLite files read byte by byte (their `-wal` and `-shm` files included) and the
packaged embedder.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rmm_core import ReflectiveMemory
from rmm_core.errors import ResidueWarning
from rmm_core.storage.sqlite import SQLiteStore

MARKERS = ("zq-Vorpalnaut-7731", "zq-Quillisquare-0042")
"""Unique strings of the texts deleted: the first a memory's text, the second its update."""


def store_bytes(path: Path) -> dict[str, bytes]:
    """The bytes of every file of a SQLite store (database, -wal, -shm) that exists now."""
    files = (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
    return {f.name: f.read_bytes() for f in files if f.exists()}


def holding(path: Path, marker: str) -> list[str]:
    return [name for name, data in store_bytes(path).items() if marker.encode() in data]


def test_delete_leaves_no_byte_of_the_text_in_the_db_wal_or_shm(tmp_path, embedder):
    """Attack: read a deleted (and updated) memory's text back from the -wal file, which
    kept three copies of it until the store was closed."""
    path = tmp_path / "memory.sqlite"
    with ReflectiveMemory.open(str(path), embedder=embedder) as mem:
        [kept] = mem.add("Carol waters the ferns on Sundays.", user_id="u")
        [secret] = mem.add(f"My locker code is {MARKERS[0]}.", user_id="u")
        mem.update(secret.id, f"My locker code is now {MARKERS[1]}.", user_id="u")
        assert all(holding(path, marker) for marker in MARKERS)  # there to be erased
        mem.delete(secret.id, user_id="u")
        for marker in MARKERS:
            assert holding(path, marker) == [], marker
        assert [m.id for m in mem.memories(user_id="u")] == [kept.id]
        assert mem.search("ferns", user_id="u", k=1)[0].memory.id == kept.id


def test_a_reader_of_an_older_snapshot_keeping_deleted_text_is_warned(tmp_path, embedder):
    """Attack: another connection keeps reading an old snapshot, so the WAL cannot be emptied
    and a deletion would silently leave the text there: the caller is warned, and the next
    deletion after that reader is done clears it."""
    path = tmp_path / "memory.sqlite"
    with ReflectiveMemory.open(SQLiteStore(path, timeout=0.2), embedder=embedder) as mem:
        [secret] = mem.add(f"My locker code is {MARKERS[0]}.", user_id="u")
        [other] = mem.add("Carol waters the ferns on Sundays.", user_id="u")
        reader = sqlite3.connect(path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM memories").fetchall()
        with pytest.warns(ResidueWarning, match="next delete or forget"):
            mem.delete(secret.id, user_id="u")
        assert holding(path, MARKERS[0]) == [f"{path.name}-wal"]
        reader.execute("COMMIT")
        reader.close()
        mem.delete(other.id, user_id="u")
        assert holding(path, MARKERS[0]) == []
