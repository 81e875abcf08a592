"""Deleted text leaves every file of the store at once, while the store is still open.

Real SQLite files read byte by byte (their `-wal` and `-shm` files included), the real
PostgreSQL backend's statistics, and the packaged embedder.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest
from backends import run_sql, split_target

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


def analyze(target: str) -> None:
    """What autovacuum's ANALYZE does on its own: sample every table of the schema."""
    run_sql(target, ["ANALYZE"])


def statistics_holding(target: str, marker: str) -> list[str]:
    """`table.column` of every column whose planner statistics (`pg_stats`) show `marker`."""
    base, schema = split_target(target)
    with psycopg.connect(base) as conn:
        return [f"{t}.{c}" for t, c in conn.execute(
            "SELECT tablename, attname FROM pg_stats WHERE schemaname = %s AND concat_ws(' ', "
            "most_common_vals::text, histogram_bounds::text, most_common_elems::text) "
            "LIKE %s", (schema, f"%{marker}%"))]


@pytest.mark.parametrize("store_target", ["postgres"], indirect=True)
def test_postgres_statistics_keep_no_deleted_text(store_target, embedder):
    """Attack: read a deleted memory's text from the planner's statistics (`pg_stats`),
    which ANALYZE fills with samples of each column and a delete leaves as they are."""
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:
        [secret] = mem.add(f"My locker code is {MARKERS[0]}.", user_id="u")
        mem.update(secret.id, f"My locker code is now {MARKERS[1]}.", user_id="u")
        mem.add("Carol waters the ferns on Sundays.", user_id="u")
        mem.add("Dan feeds the cat at noon.", user_id="u")
        analyze(store_target)
        mem.delete(secret.id, user_id="u")
        for marker in MARKERS:
            assert statistics_holding(store_target, marker) == [], marker


@pytest.mark.parametrize("store_target", ["postgres"], indirect=True)
def test_statistics_sampled_before_the_upgrade_are_dropped_at_open(store_target, embedder):
    """Attack: a store made by an earlier release keeps the texts its statistics sampled
    then, whatever is deleted after; the first open of this release drops them."""
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:
        [secret] = mem.add(f"My locker code is {MARKERS[0]}.", user_id="u")
        mem.add("Carol waters the ferns on Sundays.", user_id="u")
    run_sql(store_target, ["ALTER TABLE memories ALTER COLUMN text SET STATISTICS -1",
                           "ANALYZE memories"])  # as an earlier release left it
    assert statistics_holding(store_target, MARKERS[0]) == ["memories.text"]
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:
        assert statistics_holding(store_target, MARKERS[0]) == []
        mem.delete(secret.id, user_id="u")
        analyze(store_target)
        assert statistics_holding(store_target, MARKERS[0]) == []


@pytest.mark.backends
def test_delete_takes_its_words_out_of_the_memory_it_superseded(store_target, embedder):
    """Attack: delete a memory that superseded another, then read its text back from the
    other's `changed_to`, which search quoted after "changed" (and the file kept)."""
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:
        [old] = mem.add("I live in Portland with my partner.", user_id="u",
                        occurred_at="2024-05-01")
        [new] = mem.add("We moved to Zqvorpalton in March.", user_id="u",
                        occurred_at="2024-05-20")
        assert mem.get(old.id, user_id="u").superseded_by == new.id  # there to be undone
        mem.delete(new.id, user_id="u")
        assert mem.get(old.id, user_id="u").validity() == {}
        assert [h.memory.id for h in mem.search("where do I live", user_id="u").hits] == [old.id]
        assert all("Zqvorpalton" not in h.text for h in mem.search("moved", user_id="u").hits)
        if not store_target.startswith("postgresql://"):
            assert holding(Path(store_target), "Zqvorpalton") == []
