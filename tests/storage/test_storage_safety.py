"""Storage edge cases a careless user or an attacker reaches: passwords in URLs and libpq's
messages, malformed URLs, a tampered schema version, auto turn ids, another embedding
dimension, read-only files, the durability setting, and the CLI's bad `export --out`.

Real SQLite files, real psycopg (an unreachable port, or the pgserver test server for the
`backends`-marked tests) and the real embedder; the read-only tests drop root privileges in
a forked child, since root writes a 0444 file regardless of its mode.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sqlite3
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
from backends import run_sql, split_target

from rmm_core import InvalidInputError, ReflectiveMemory, StorageError, Turn
from rmm_core.cli import main
from rmm_core.models.embed import HashEmbedder
from rmm_core.ops.commands import NO_DATABASE, USAGE
from rmm_core.ops.transfer import export_records
from rmm_core.storage import open_store
from rmm_core.storage.redact import redact

PASSWORD = "S3cretPW"
LEAKY_URLS = [
    f"postgresql://bob@127.0.0.1:1/db?password={PASSWORD}&connect_timeout=2",
    f"postgresql://bob:{PASSWORD}%ZZ@127.0.0.1:1/db",       # a bad %-escape: libpq echoes it
    f"postgresql://bob:{PASSWORD} x@127.0.0.1:1/db",        # a space: libpq echoes it
    f"postgresql://bob@127.0.0.1:1/db?password={PASSWORD}%ZZ",
    f"postgresql://bob:{PASSWORD}@[::1/db",                 # unclosed IPv6 bracket
]


@pytest.mark.parametrize("url", LEAKY_URLS)
def test_no_password_in_errors_tracebacks_or_cli_output(url, capsys, caplog):
    with pytest.raises((StorageError, InvalidInputError)) as info:
        open_store(url)
    chain, exc = [], info.value
    while exc is not None:  # what logging.exception would print, causes included
        chain.append(str(exc))
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    assert "PostgreSQL" in chain[0]
    assert all(PASSWORD not in text for text in chain)
    logging.getLogger("test").error("open failed", exc_info=info.value)
    assert PASSWORD not in caplog.text
    assert main(["stats", "--db", url]) == NO_DATABASE
    out, err = capsys.readouterr()
    assert err.startswith("rmm stats: ")
    assert err.count("\n") == 1
    assert PASSWORD not in out + err


def test_a_clean_driver_error_stays_the_cause():
    with pytest.raises(StorageError) as info:
        open_store("postgresql://bob@127.0.0.1:1/db?connect_timeout=2")
    assert isinstance(info.value.__cause__, psycopg.OperationalError)


@pytest.mark.parametrize("text", [
    f"host=h password={PASSWORD} user=bob", f"host=h password = '{PASSWORD} x' user=bob",
    f"see postgres://bob:{PASSWORD}@h/db", f"postgresql://h/db?sslmode=off&PASSWORD={PASSWORD}"])
def test_conninfo_and_url_passwords_are_redacted_in_any_text(text):
    clean = redact(text)
    assert PASSWORD not in clean
    assert "***" in clean
    assert ("bob" in clean or "sslmode" in clean)


def test_an_unclosed_ipv6_bracket_is_a_typed_error():
    with pytest.raises(InvalidInputError, match="bad PostgreSQL URL"):
        ReflectiveMemory.open("postgresql://[::1", embedder=HashEmbedder())


# schema version ------------------------------------------------------------------------------
def tamper(target: str, value: str) -> None:
    if target.startswith("postgresql://"):
        base, schema = split_target(target)
        with psycopg.connect(base) as conn:
            conn.execute(f"UPDATE {schema}.meta SET value = %s WHERE key = 'schema_version'",
                         (value,))
        return
    with sqlite3.connect(target) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (value,))


@pytest.mark.backends
@pytest.mark.parametrize("value", ["abc", "-1", "0", ""])
def test_a_tampered_schema_version_is_a_storage_error(store_target, value):
    open_store(store_target).close()
    tamper(store_target, value)
    with pytest.raises(StorageError, match="damaged schema version"):
        open_store(store_target)


# turn ids ------------------------------------------------------------------------------------
@pytest.mark.backends
def test_an_explicit_id_like_an_automatic_one_does_not_block_the_session(store_target):
    with ReflectiveMemory.open(store_target, embedder=HashEmbedder()) as mem:
        mem.append(Turn("me", "first"), user_id="u", session_id="auto")
        mem.append(Turn("me", "second", id="auto:3"), user_id="u", session_id="auto")
        mem.append([Turn("me", "third"), Turn("me", "fourth")], user_id="u", session_id="auto")
        mem.append(Turn("me", "fifth"), user_id="u", session_id="auto")
        turns = mem.turns(user_id="u", session_id="auto")
        assert [t.text for t in turns] == ["first", "second", "third", "fourth", "fifth"]
        assert [t.id for t in turns] == ["auto:1", "auto:3", "auto:3.2", "auto:4", "auto:5"]
        with pytest.raises(InvalidInputError, match="already exists"):
            mem.append(Turn("me", "again", id="auto:4"), user_id="u", session_id="auto")


# embedding dimension -------------------------------------------------------------------------
@pytest.mark.backends
def test_another_embedding_dimension_is_refused_at_open(store_target, embedder):
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:
        mem.add_session([Turn("me", "I adopted a dog called Rex.")], user_id="u")
    with pytest.raises(InvalidInputError, match=r"384 dimensions .* makes 64"):
        ReflectiveMemory.open(store_target, embedder=HashEmbedder(64))
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:
        assert mem.search("dog", user_id="u", k=1).hits


@pytest.mark.backends
def test_another_embedder_of_the_same_dimension_is_refused_at_open(store_target, embedder):
    with ReflectiveMemory.open(store_target, embedder=HashEmbedder(384)) as mem:
        mem.add_session([Turn("me", "I adopted a dog called Rex.")], user_id="u")
    with pytest.raises(InvalidInputError, match=r"built with the embedder hash-384 but is "
                                                r"opened with the embedder all-MiniLM-L6-v2"):
        ReflectiveMemory.open(store_target, embedder=embedder)
    with ReflectiveMemory.open(store_target, embedder=HashEmbedder(384)) as mem:
        assert mem.search("dog", user_id="u", k=1).hits


class Renamed(HashEmbedder):
    """The same vectors as `HashEmbedder`, under another name (as a framework's wrapper)."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.name = "renamed-hash"


@pytest.mark.backends
def test_the_same_model_under_another_name_is_accepted(store_target):
    with ReflectiveMemory.open(store_target, embedder=HashEmbedder(384)) as mem:
        mem.add_session([Turn("me", "I adopted a dog called Rex.")], user_id="u")
        assert mem.store.embedder().name == "hash-384"
    with ReflectiveMemory.open(store_target, embedder=Renamed(384)) as mem:
        assert mem.search("dog", user_id="u", k=1).hits
        assert mem.store.embedder().name == "hash-384"  # the record is kept


@pytest.mark.backends
def test_a_store_that_recorded_no_embedder_adopts_the_first_one_opened(store_target, embedder):
    with ReflectiveMemory.open(store_target, embedder=embedder) as mem:
        mem.add_session([Turn("me", "I adopted a dog called Rex.")], user_id="u")
    run_sql(store_target, ["DELETE FROM meta WHERE key LIKE 'embedder%'"])  # as made before
    with ReflectiveMemory.open(store_target, embedder=HashEmbedder(384)) as mem:
        assert mem.search("dog", user_id="u", k=1).hits  # its vectors are taken as this one's
    with pytest.raises(InvalidInputError, match=r"built with the embedder hash-384 but is "
                                                r"opened with the embedder all-MiniLM"):
        ReflectiveMemory.open(store_target, embedder=embedder)


# durability ----------------------------------------------------------------------------------
@pytest.mark.parametrize("level, code", [("NORMAL", 1), ("FULL", 2)])
def test_synchronous_is_a_setting(tmp_path, level, code):
    with ReflectiveMemory.open(str(tmp_path / "m.sqlite"), embedder=HashEmbedder(),
                               storage={"synchronous": level}) as mem:
        assert mem.store._conn.execute("PRAGMA synchronous").fetchone()[0] == code
    with pytest.raises(ValueError, match="synchronous"):
        ReflectiveMemory.open(":memory:", embedder=HashEmbedder(), storage={"synchronous": "OFF"})


# read-only databases ---------------------------------------------------------------------------
def unprivileged(check) -> None:
    """Run `check` as a user who cannot write what root made read-only (a forked child)."""
    if os.geteuid() != 0:
        check()
        return
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the outcome through the pipe, never return to pytest
        os.close(read)
        outcome = b"ok"
        try:
            os.setgid(65534)
            os.setuid(65534)
            check()
        except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent
            outcome = f"{type(exc).__name__}: {exc}".encode()
        os.write(write, outcome)
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:  # a child stuck on a lock a thread held at fork
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the unprivileged child hung")
        time.sleep(0.05)
    with os.fdopen(read, "rb") as pipe:
        assert pipe.read().decode() == "ok"


@pytest.fixture
def shared_dir():
    """A folder another user can reach (pytest's own temporary folders are private)."""
    path = Path(tempfile.mkdtemp(prefix="rmm-ro-"))
    path.chmod(0o755)
    yield path
    for folder in (path, *path.iterdir()):
        folder.chmod(0o755)
    shutil.rmtree(path)


@pytest.mark.parametrize("how", ["file 0444", "folder 0555"])
def test_a_read_only_database_opens_for_reading(shared_dir, how):
    path = str(shared_dir / "m.sqlite")
    embedder = HashEmbedder()
    with ReflectiveMemory.open(path, embedder=embedder) as mem:
        mem.add_session([Turn("me", "I adopted a dog called Rex.")], user_id="u")
        expected = [m.text for m in mem.memories(user_id="u")]
    os.chmod(path, 0o444)
    if how == "folder 0555":
        os.chmod(shared_dir, 0o555)
    assert not os.path.exists(path + "-wal")

    def check() -> None:
        with ReflectiveMemory.open(path, embedder=embedder) as mem:
            assert mem.store.read_only
            assert [m.text for m in mem.memories(user_id="u")] == expected
            assert mem.search("dog", user_id="u", k=1).hits
            assert [t.text for t in mem.turns(user_id="u")] == ["I adopted a dog called Rex."]
            assert sum(1 for _ in export_records(mem.store, "u")) == 4
            with pytest.raises(StorageError, match="read-only"):
                mem.append(Turn("me", "more"), user_id="u", session_id="s")
            with pytest.raises(StorageError, match="read-only"):
                mem.forget(user_id="u")
            assert len(mem.turns(user_id="u")) == 1

    unprivileged(check)


# the command line ----------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["missing folder", "a folder", "read-only folder"])
def test_a_bad_export_path_is_one_line_and_a_usage_code(shared_dir, capsys, where):
    db = str(shared_dir / "m.sqlite")
    with ReflectiveMemory.open(db, embedder=HashEmbedder()) as mem:
        mem.add_session([Turn("me", "I adopted a dog called Rex.")], user_id="u")
    out = {"missing folder": shared_dir / "nope" / "u.jsonl", "a folder": shared_dir,
           "read-only folder": shared_dir / "locked" / "u.jsonl"}[where]
    if where == "read-only folder":
        out.parent.mkdir(mode=0o555)

    def check() -> None:
        assert main(["export", "--db", db, "--user", "u", "--out", str(out)]) == USAGE
        err = capsys.readouterr().err
        assert err.startswith(f"rmm export: cannot write {out}")
        assert err.count("\n") == 1

    unprivileged(check) if where == "read-only folder" else check()
