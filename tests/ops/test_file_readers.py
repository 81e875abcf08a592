"""Attacks on the files `rmm import` and `rmm add` read: bytes that are not UTF-8, a line
nested 100,000 deep, NaN literals, a file past `--max-bytes`, and memory ids that another
user of the database holds. Each gets exit 5 (2 for a bad option), one line naming what is
wrong, and nothing written. Real SQLite files; the CLI runs in-process through `main`."""

from __future__ import annotations

import json

import pytest

from rmm_core import ReflectiveMemory, Turn
from rmm_core.cli import main
from rmm_core.ops.commands import BAD_DATA, OK, USAGE
from rmm_core.ops.transfer import export_records
from rmm_core.storage import open_store

EMPTY = {"users": 0, "sessions": 0, "turns": 0, "memories": 0}
HOSTILE = {
    "not UTF-8": b"\xff\xfe garbage\n",
    "100,000 nested [": b"[" * 100_000 + b"\n",
    "100,000 nested {": b'{"a":' * 100_000 + b"\n",
    "NaN literal": b'{"type": "header", "format": "rmm-export", "version": 1, "x": NaN}\n',
    "Infinity literal": b'[{"speaker": "me", "text": "hi", "id": Infinity}]\n',
}
EXPECTED = {"not UTF-8": "not UTF-8", "100,000 nested [": "nests deeper",
            "100,000 nested {": "nests deeper", "NaN literal": "NaN",
            "Infinity literal": "Infinity"}


def counts(db: str) -> dict:
    store = open_store(db)
    try:
        return store.counts()
    finally:
        store.close()


@pytest.fixture(scope="module")
def export(tmp_path_factory, embedder) -> list[dict]:
    """An export of user u1: one session, its turns, its memories with vectors."""
    path = str(tmp_path_factory.mktemp("src") / "m.sqlite")
    with ReflectiveMemory.open(path, embedder=embedder) as mem:
        mem.add_session([Turn("me", "I adopted a dog called Rex."),
                         Turn("me", "I started pottery classes on Monday.")], user_id="u1",
                        session_id="a")
        return list(export_records(mem.store, "u1"))


@pytest.mark.parametrize("attack", HOSTILE)
def test_import_of_a_hostile_file_exits_5_with_a_message_and_writes_nothing(
        tmp_path, capsys, attack):
    """Used to crash with a traceback (exit 1) on non-UTF-8 bytes and on deep nesting."""
    path = tmp_path / "bad.jsonl"
    path.write_bytes(HOSTILE[attack])
    db = str(tmp_path / "t.sqlite")
    assert main(["--db", db, "import", str(path)]) == BAD_DATA
    err = capsys.readouterr().err
    assert err.startswith("rmm import: nothing imported: line 1")
    assert EXPECTED[attack] in err
    assert "Traceback" not in err
    assert counts(db) == EMPTY


@pytest.mark.parametrize("attack", HOSTILE)
def test_add_of_a_hostile_file_exits_5_with_a_message_and_writes_nothing(
        tmp_path, capsys, attack):
    """`rmm add` reads user files too: the same attacks, the same answer."""
    path = tmp_path / "bad.json"
    path.write_bytes(HOSTILE[attack])
    db = str(tmp_path / "t.sqlite")
    assert main(["--db", db, "add", "--user", "u", str(path)]) == BAD_DATA
    err = capsys.readouterr().err
    assert err.startswith("rmm add: nothing added:")
    assert EXPECTED[attack] in err
    assert counts(db) == EMPTY


def test_import_of_a_file_past_max_bytes_is_refused_before_it_is_read_whole(
        export, tmp_path, capsys):
    """A huge file would be held in memory whole while checked: refused past --max-bytes."""
    path = tmp_path / "u1.jsonl"
    text = "".join(json.dumps(r) + "\n" for r in export)
    path.write_text(text)
    db = str(tmp_path / "t.sqlite")
    assert main(["--db", db, "import", str(path), "--max-bytes", str(len(text) - 1)]) == \
        BAD_DATA
    assert f"over {len(text) - 1:,} bytes" in capsys.readouterr().err
    assert counts(db) == EMPTY
    assert main(["--db", db, "import", str(path), "--max-bytes", "0"]) == USAGE
    assert main(["--db", db, "import", str(path), "--max-bytes", str(len(text))]) == OK


def test_import_whose_memory_ids_another_user_holds_gets_new_ids_and_tells_nothing_more(
        export, tmp_path, capsys):
    """Used to fail with the raw `UNIQUE constraint failed: memories.id`, which also told the
    importer that another user holds that id. Now the memories get new ids, as a copy
    under `--user` does, and the other user's memories are untouched."""
    path = tmp_path / "u1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in export))
    db = str(tmp_path / "t.sqlite")
    assert main(["--db", db, "import", str(path), "--user", "victim"]) == OK
    capsys.readouterr()
    store = open_store(db)
    victim_ids = {m.text: m.id for m in store.memories("victim")}
    store.close()
    stolen = [{**r, "id": victim_ids[r["text"]]} if r["type"] == "memory" else r
              for r in export]  # u1's own file, with ids the victim holds
    path.write_text("".join(json.dumps(r) + "\n" for r in stolen))
    assert main(["--db", db, "import", str(path)]) == OK
    out, err = capsys.readouterr()
    assert "UNIQUE" not in out + err
    assert "victim" not in out + err
    assert "(with new memory ids)" in out
    store = open_store(db)
    try:
        mine = store.memories("u1")
        assert {m.text for m in mine} == set(victim_ids)
        assert not {m.id for m in mine} & set(victim_ids.values())
        assert {m.id for m in store.memories("victim")} == set(victim_ids.values())
    finally:
        store.close()


def test_import_keeps_ids_when_they_are_free(export, tmp_path, capsys):
    """The renaming happens only on a clash: a plain restore keeps every id."""
    path = tmp_path / "u1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in export))
    db = str(tmp_path / "t.sqlite")
    assert main(["--db", db, "import", str(path)]) == OK
    assert "new memory ids" not in capsys.readouterr().out
    store = open_store(db)
    try:
        assert {m.id for m in store.memories("u1")} == \
            {r["id"] for r in export if r["type"] == "memory"}
    finally:
        store.close()


def test_reflect_refuses_a_set_value_nested_too_deep(export, tmp_path, capsys):
    """`--set` values are JSON: 100,000 nested `[` used to raise RecursionError."""
    path = tmp_path / "u1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in export))
    db = str(tmp_path / "t.sqlite")
    assert main(["--db", db, "import", str(path)]) == OK
    assert main(["--db", db, "reflect", "--set", "search.k=" + "[" * 100_000]) == USAGE
    assert "nests too deeply" in capsys.readouterr().err
