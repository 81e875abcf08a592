"""The operators' command line: `rmm inspect | search | export | import | forget | stats`.

Commands run in-process through `rmm_core.cli.main` on real SQLite files built with the real
embedder; one test runs the installed `rmm` entry point as a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from test_core import ADOPTION, PAINTING

from rmm_core import ReflectiveMemory, Turn
from rmm_core.cli import main
from rmm_core.ops.commands import BAD_DATA, NO_DATABASE, OK, REFUSED, UNKNOWN_USER, USAGE
from rmm_core.ops.transfer import export_records, import_records
from rmm_core.storage import open_store


@pytest.fixture
def db(tmp_path, embedder):
    """A SQLite file with user u1: two sessions, one repeated so that a merge made versions,
    and one session appended but not yet reflected."""
    path = tmp_path / "m.sqlite"
    mem = ReflectiveMemory.open(str(path), embedder=embedder, stages={"merge_threshold": 0.9})
    mem.add_session(PAINTING, user_id="u1", session_id="a", started_at="2023-05-08T13:56")
    mem.add_session([Turn(t.speaker, t.text, id=t.id.replace("s1", "s3")) for t in PAINTING],
                    user_id="u1", session_id="b")
    mem.add_session(ADOPTION, user_id="u1", session_id="c")
    mem.append([Turn("Ana", "Tomorrow I start pottery classes.", id="open:1")],
               user_id="u1", session_id="d")
    mem.close()
    return str(path)


def rmm(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_inspect_shows_source_turns_and_versions(db, capsys):
    code, out, _ = rmm(capsys, "inspect", "--db", db, "--user", "u1")
    assert code == OK
    assert "from turns:" in out
    assert "s1:1" in out
    assert "v1 created" in out
    assert "v2 merged" in out  # the repeated session merged into an existing memory
    code, out, _ = rmm(capsys, "--db", db, "inspect", "--user", "u1", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    merged = next(r for r in rows if len(r["versions"]) == 2)
    assert {t["id"] for t in merged["source_turns"]} == set(merged["refs"])
    assert merged["versions"][0]["text"] in merged["text"]


def test_search_prints_hits_with_scores_and_refs(db, capsys):
    code, out, _ = rmm(capsys, "search", "--db", db, "--user", "u1",
                       "Which agency is Caroline using to adopt?", "--k", "2", "--json")
    hits = [json.loads(line) for line in out.splitlines()]
    assert code == OK
    assert len(hits) == 2
    assert "agency" in hits[0]["text"]
    assert hits[0]["refs"][0].startswith("s2:")
    assert hits[0]["score"] >= hits[1]["score"]
    code, out, _ = rmm(capsys, "search", "--db", db, "--user", "u1", "sunrise painting")
    assert code == OK
    assert out.startswith("1. score ")
    assert "refs s1:" in out


def test_search_leaves_idle_sessions_to_the_application(db, capsys):
    """Opening a memory reflects idle sessions; `rmm search` must not (wrong pipeline)."""
    store = open_store(db)
    store.append_turns("u1", "idle", [Turn("Ana", "I sold my old car to a neighbour.", id="i:1")],
                       None, time.time() - 10_000)
    before = store.counts("u1")["memories"]
    store.close()
    assert rmm(capsys, "search", "--db", db, "--user", "u1", "car")[0] == OK
    store = open_store(db)
    assert store.session("u1", "idle").reflected == 0
    assert store.counts("u1")["memories"] == before
    store.close()


def test_stats_counts_everything_and_one_user(db, capsys):
    code, out, _ = rmm(capsys, "stats", "--db", db, "--json")
    figures = json.loads(out)
    assert code == OK
    assert figures["users"] == 1
    assert figures["sessions"] == 4
    assert figures["turns"] == 2 * len(PAINTING) + len(ADOPTION) + 1
    assert figures["memories"] >= 2
    assert figures["llm_calls"] == 0
    code, out, _ = rmm(capsys, "stats", "--db", db, "--user", "u1")
    assert code == OK
    assert "memories" in out


def test_export_import_round_trip_is_exact(db, tmp_path, capsys, embedder):
    out_file = tmp_path / "u1.jsonl"
    assert rmm(capsys, "export", "--db", db, "--user", "u1", "--out", str(out_file))[0] == OK
    fresh = str(tmp_path / "fresh.sqlite")
    code, out, _ = rmm(capsys, "--db", fresh, "import", str(out_file))
    assert code == OK
    assert "imported u1" in out
    a = ReflectiveMemory.open(db, embedder=embedder, sessions={"idle_timeout": None})
    b = ReflectiveMemory.open(fresh, embedder=embedder, sessions={"idle_timeout": None})
    assert a.turns(user_id="u1") == b.turns(user_id="u1")
    ma, mb = a.memories(user_id="u1"), b.memories(user_id="u1")
    assert [(m.id, m.text, m.key, m.refs, m.versions) for m in ma] == \
        [(m.id, m.text, m.key, m.refs, m.versions) for m in mb]
    assert b.store.session("u1", "d").reflected == 0  # still pending, as it was
    for query in ("Which agency is Caroline using?", "Who painted a sunrise?"):
        assert [h.text for h in a.search(query, user_id="u1")] == \
            [h.text for h in b.search(query, user_id="u1")]
    a.close()
    b.close()


def test_import_as_another_user_copies_within_one_store(db, embedder):
    source = open_store(db)
    records = list(export_records(source, "u1"))
    source.close()
    mem = ReflectiveMemory.open(db, embedder=embedder, sessions={"idle_timeout": None})
    summary = import_records(mem.store, records, user_id="u2")
    assert summary["user_id"] == "u2"
    one, two = mem.memories(user_id="u1"), mem.memories(user_id="u2")
    assert [m.text for m in one] == [m.text for m in two]
    assert not {m.id for m in one} & {m.id for m in two}
    mem.close()


def test_import_of_another_models_vectors_is_refused_and_an_empty_store_takes_its_model(
        db, tmp_path):
    """An export made with one embedder used to be imported into a store built with
    another of the same dimension: the vectors mixed silently."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from rmm_core.errors import EmbedderMismatchError

    source = open_store(db)
    records = list(export_records(source, "u1"))
    source.close()
    assert records[0]["embedder"]["name"]
    other = str(tmp_path / "other.sqlite")
    with ReflectiveMemory.open(other, embedder=DeterministicFakeEmbedding(size=384)) as mem:
        mem.add("A fact embedded by another model.", user_id="u9")
        with pytest.raises(EmbedderMismatchError, match="import it into a new store"):
            import_records(mem.store, records)
        assert mem.memories(user_id="u1") == []
    fresh = open_store(str(tmp_path / "fresh.sqlite"))
    import_records(fresh, records)
    assert fresh.embedder().name == records[0]["embedder"]["name"]
    fresh.close()


def test_bad_import_data_writes_nothing(db, tmp_path, capsys):
    fresh = str(tmp_path / "fresh.sqlite")
    export = tmp_path / "u1.jsonl"
    rmm(capsys, "export", "--db", db, "--user", "u1", "--out", str(export))
    lines = export.read_text().splitlines()
    for name, text in {"cut": "\n".join(lines[:-1]), "not json": "{oops",
                       "no header": "\n".join(lines[1:]),
                       "bad memory": "\n".join([*lines[:-1], '{"type": "memory"}'])}.items():
        bad = tmp_path / f"{name}.jsonl"
        bad.write_text(text + "\n")
        code, _, err = rmm(capsys, "--db", fresh, "import", str(bad))
        assert code == BAD_DATA, name
        assert "nothing imported" in err
    assert rmm(capsys, "--db", fresh, "stats", "--json")[1].startswith('{"users": 0')
    assert rmm(capsys, "--db", db, "import", str(export))[0] == BAD_DATA  # u1 exists there


def test_missing_database_bad_url_and_unknown_user(db, tmp_path, capsys):
    missing = tmp_path / "none.sqlite"
    code, _, err = rmm(capsys, "stats", "--db", str(missing))
    assert code == NO_DATABASE
    assert "no database" in err
    assert not missing.exists()
    assert rmm(capsys, "stats", "--db", f"sqlite:///{missing}")[0] == NO_DATABASE
    assert not missing.exists()
    assert rmm(capsys, "stats", "--db", f"sqlite:///{db}")[0] == OK
    code, _, err = rmm(capsys, "stats", "--db", "mysql://x/y")
    assert code == NO_DATABASE
    assert "unsupported database URL" in err
    code, _, err = rmm(capsys, "stats", "--db", "postgresql://bob:s3cret@127.0.0.1:1/x")
    assert code == NO_DATABASE
    assert "bob:***@" in err
    assert "s3cret" not in err
    assert err.count("\n") == 1  # one line, whatever the driver's message holds
    code, _, err = rmm(capsys, "inspect", "--db", db, "--user", "nobody")
    assert code == UNKNOWN_USER
    assert "unknown user" in err
    not_a_db = tmp_path / "text.sqlite"
    not_a_db.write_text("hello")
    assert rmm(capsys, "stats", "--db", str(not_a_db))[0] == NO_DATABASE
    with pytest.raises(SystemExit) as usage:
        main(["search", "--db", db])  # no --user, no query
    assert usage.value.code == 2


def test_rmm_db_environment_variable_is_the_default(db, capsys, monkeypatch):
    monkeypatch.setenv("RMM_DB", db)
    code, out, _ = rmm(capsys, "stats", "--json")
    assert code == OK
    assert json.loads(out)["users"] == 1


def test_forget_asks_for_the_user_id(db, capsys, monkeypatch):
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False, raising=False)
    assert rmm(capsys, "forget", "--db", db, "--user", "u1")[0] == REFUSED
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", lambda prompt: "no")
    assert rmm(capsys, "forget", "--db", db, "--user", "u1")[0] == REFUSED

    def closed_input(prompt: str) -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", closed_input)  # Ctrl-D at the prompt
    code, _, err = rmm(capsys, "forget", "--db", db, "--user", "u1")
    assert code == REFUSED
    assert "nothing deleted" in err
    assert json.loads(rmm(capsys, "stats", "--db", db, "--json")[1])["users"] == 1
    monkeypatch.setattr("builtins.input", lambda prompt: "u1")
    assert rmm(capsys, "forget", "--db", db, "--user", "u1")[0] == OK
    assert json.loads(rmm(capsys, "stats", "--db", db, "--json")[1])["turns"] == 0
    assert rmm(capsys, "forget", "--db", db, "--user", "u1", "--yes")[0] == UNKNOWN_USER


def test_installed_entry_point_runs(db):
    env = {**os.environ, "RMM_DB": db}
    done = subprocess.run([sys.executable, "-m", "rmm_core.cli", "inspect", "--user", "u1"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == OK, done.stderr
    assert "memories of u1" in done.stdout
    done = subprocess.run([sys.executable, "-m", "rmm_core.cli", "stats", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert "example:" in done.stdout
    assert "exit codes:" in done.stdout


@pytest.mark.backends
def test_restore_on_every_backend(db, store_target, embedder):
    source = ReflectiveMemory.open(db, embedder=embedder, sessions={"idle_timeout": None})
    target = ReflectiveMemory.open(store_target, embedder=embedder, sessions={"idle_timeout": None})
    import_records(target.store, export_records(source.store, "u1"))
    assert target.turns(user_id="u1") == source.turns(user_id="u1")
    assert [(m.text, m.refs, m.versions) for m in target.memories(user_id="u1")] == \
        [(m.text, m.refs, m.versions) for m in source.memories(user_id="u1")]
    query = "Who painted a sunrise?"
    assert [h.memory.id for h in target.search(query, user_id="u1")] == \
        [h.memory.id for h in source.search(query, user_id="u1")]
    source.close()
    target.close()


def test_users_lists_every_user_with_counts(db, capsys):
    store = open_store(db)
    store.append_turns("u2", "x", [Turn("Bo", "Hello there.", id="x:1")], None, time.time())
    store.close()
    code, out, _ = rmm(capsys, "users", "--db", db, "--json")
    rows = {r["user_id"]: r for r in map(json.loads, out.splitlines())}
    assert code == OK
    assert set(rows) == {"u1", "u2"}
    assert rows["u1"]["sessions"] == 4
    assert rows["u1"]["turns"] == 2 * len(PAINTING) + \
        len(ADOPTION) + 1
    assert rows["u1"]["memories"] >= 2
    assert rows["u2"] == {"user_id": "u2", "sessions": 1, "turns": 1, "memories": 0,
                          "sessions_waiting": 1, "sessions_failed": 0}
    code, out, _ = rmm(capsys, "users", "--db", db)
    assert code == OK
    assert out.startswith("u1  4 sessions")
    assert out.endswith("2 users\n")


def test_inspect_limit_and_one_memory(db, capsys):
    every = [json.loads(line) for line in rmm(capsys, "inspect", "--db", db, "--user", "u1",
                                              "--json")[1].splitlines()]
    assert len(every) >= 2
    code, out, _ = rmm(capsys, "inspect", "--db", db, "--user", "u1", "--limit", "1")
    assert code == OK
    assert out.count("    text: ") == 1
    assert out.endswith(f"1 of {len(every)} memories of u1\n")
    code, out, _ = rmm(capsys, "inspect", "--db", db, "--user", "u1", "--json",
                       "--memory", every[-1]["id"])
    assert code == OK
    assert [json.loads(line) for line in out.splitlines()] == [every[-1]]
    assert rmm(capsys, "inspect", "--db", db, "--user", "u1", "--memory", "nope")[0] \
        == UNKNOWN_USER
    assert rmm(capsys, "inspect", "--db", db, "--user", "u1", "--limit", "0")[0] == USAGE


def test_reflect_reflects_waiting_sessions_only_unless_open(db, capsys):
    store = open_store(db)
    store.append_turns("u1", "idle", [Turn("Ana", "I sold my old car to a neighbour.", id="i:1")],
                       None, time.time() - 10_000)
    store.close()
    before = json.loads(rmm(capsys, "stats", "--db", db, "--user", "u1", "--json")[1])
    assert before["sessions_waiting"] == 2  # the idle one and the open one
    code, out, _ = rmm(capsys, "reflect", "--db", db, "--user", "u1")
    assert code == OK
    assert out.startswith("reflected 1 of 1 sessions")
    store = open_store(db)
    assert store.session("u1", "idle").reflected == 1
    assert store.session("u1", "d").reflected == 0
    assert any("sold my old car" in m.text for m in store.memories("u1"))
    store.close()
    code, out, _ = rmm(capsys, "reflect", "--db", db, "--open", "--set",
                       "sessions.idle_timeout=60")
    assert code == OK
    assert out.startswith("reflected 1 of 1 sessions")
    after = json.loads(rmm(capsys, "stats", "--db", db, "--user", "u1", "--json")[1])
    assert after["sessions_waiting"] == 0
    assert after["memories"] > before["memories"]
    with pytest.warns(DeprecationWarning, match="'sessions.idle_timeout'"):  # the old name
        assert rmm(capsys, "reflect", "--db", db, "--set", "session_idle_timeout=60")[0] == OK
    assert rmm(capsys, "reflect", "--db", db, "--set", "no_such_field=1")[0] == USAGE
    assert rmm(capsys, "reflect", "--db", db, "--set", "sessions.no_such_field=1")[0] == USAGE
    assert rmm(capsys, "reflect", "--db", db, "--set", "reranker.kind=magic")[0] == USAGE
    assert rmm(capsys, "reflect", "--db", db, "--set", "oops")[0] == USAGE


def test_progress_bars_show_on_request_and_switch_off(db, tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "u1.jsonl")
    monkeypatch.setenv("RMM_PROGRESS", "1")
    code, _, err = rmm(capsys, "export", "--db", db, "--user", "u1", "--out", out)
    assert code == OK
    assert "exporting" in err
    assert "record" in err
    code, _, err = rmm(capsys, "--db", str(tmp_path / "copy.sqlite"), "import", out)
    assert code == OK
    assert "reading" in err
    code, _, err = rmm(capsys, "--no-progress", "export", "--db", db, "--user", "u1",
                       "--out", out)
    assert code == OK
    assert "exporting" not in err
    monkeypatch.delenv("RMM_PROGRESS")
    code, _, err = rmm(capsys, "export", "--db", db, "--user", "u1", "--out", out)
    assert code == OK
    assert "exporting" not in err
