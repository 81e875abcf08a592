"""`rmm add`: conversations from a JSON or JSON Lines file become a user's sessions and
memories, in-process through `rmm_core.cli.main` on a real SQLite file with the real
embedder; a bad file stores nothing and exits with BAD_DATA."""

from __future__ import annotations

import json

import pytest

from rmm_core import ReflectiveMemory
from rmm_core.cli import main
from rmm_core.errors import InvalidInputError
from rmm_core.ops.commands import BAD_DATA, OK, USAGE
from rmm_core.ops.sessions_file import read_sessions, sample_path

SESSIONS = [
    {"session_id": "trip", "started_at": "2024-05-02T10:00", "turns": [
        {"speaker": "user", "text": "I booked a trip to Kyoto for October.", "id": "t1"},
        {"speaker": "assistant", "text": "Lovely, autumn leaves are at their best then.",
         "id": "t2"}]},
    {"turns": [{"role": "user", "content": "My favourite tea is genmaicha.", "id": "t3"}]},
]


def stored(path, user):
    with ReflectiveMemory.open(str(path), progress=False) as mem:
        return mem.turns(user_id=user), mem.memories(user_id=user)


def test_sessions_from_a_json_file_become_memories(tmp_path, capsys):
    source = tmp_path / "chats.json"
    source.write_text(json.dumps(SESSIONS))
    db = tmp_path / "m.sqlite"
    assert main(["--db", str(db), "add", "--user", "kai", str(source)]) == OK
    assert "added 2 sessions (3 turns) for kai" in capsys.readouterr().out
    turns, memories = stored(db, "kai")
    assert [t.id for t in turns] == ["t1", "t2", "t3"]
    assert {t.session_id for t in turns[:2]} == {"trip"}
    assert any("genmaicha" in m.text for m in memories)
    assert main(["--db", str(db), "add", "--user", "kai", str(source)]) == OK  # a re-run
    assert len(stored(db, "kai")[0]) == 3


def test_messages_from_a_json_lines_file_are_one_session(tmp_path):
    source = tmp_path / "chat.jsonl"
    source.write_text("\n".join(json.dumps(t) for t in SESSIONS[0]["turns"]) + "\n")
    db = tmp_path / "m.sqlite"
    assert main(["--db", str(db), "add", "--user", "kai", str(source)]) == OK
    turns, _ = stored(db, "kai")
    assert len({t.session_id for t in turns}) == 1
    assert len(turns) == 2


def test_the_packaged_sample_is_added(tmp_path, capsys):
    db = tmp_path / "m.sqlite"
    assert main(["--db", str(db), "add", "--user", "maya", "--sample"]) == OK
    assert "added 5 sessions (30 turns) for maya" in capsys.readouterr().out
    turns, memories = stored(db, "maya")
    assert len(turns) == 30
    assert memories


@pytest.mark.parametrize(("content", "message"), [
    ("[]", "non-empty list"),
    ('{"chats": []}', "'sessions'"),
    ('[{"turns": [{"speaker": "user", "text": ""}]}]', "session 1, turn 1"),
    ('[{"turns": [], "session_id": "a"}]', "'turns' must be a non-empty list"),
    ('[{"turns": [{"speaker": "u", "text": "hi"}], "when": 1}]', "unknown field"),
    ('{"speaker": "u", "text": "hi"}\nnot json\n', "line 2 is not JSON"),
    ('[{"turns": [{"speaker": "u", "text": "hi"}]}, {"speaker": "u", "text": "x"}]', "mixes"),
])
def test_a_bad_file_stores_nothing(tmp_path, capsys, content, message):
    source = tmp_path / "bad.json"
    source.write_text(content)
    with pytest.raises(InvalidInputError, match=message):
        read_sessions(source)
    db = tmp_path / "m.sqlite"
    assert main(["--db", str(db), "add", "--user", "kai", str(source)]) == BAD_DATA
    assert "nothing added" in capsys.readouterr().err
    assert stored(db, "kai") == ([], [])


def test_a_missing_file_is_bad_data_and_names_the_flag_for_a_fact(tmp_path, capsys):
    db = tmp_path / "m.sqlite"
    assert main(["--db", str(db), "add", "--user", "kai", str(tmp_path / "none.json")]) \
        == BAD_DATA
    assert f"no file '{tmp_path / 'none.json'}'" in capsys.readouterr().err
    # what a user types first to add one fact: told the exact command
    assert main(["--db", str(db), "add", "--user", "ana", "I like green tea"]) == BAD_DATA
    err = capsys.readouterr().err
    assert "rmm add --user ana --text 'I like green tea'" in err
    assert stored(db, "ana") == ([], [])


def test_a_fact_is_added_with_text_once(tmp_path, capsys):
    db = tmp_path / "m.sqlite"
    assert main(["--db", str(db), "add", "--user", "ana", "--text", "I like green tea",
                 "--occurred-at", "2024-05-01"]) == OK
    out = capsys.readouterr().out
    assert out.startswith("added a fact for ana: 1 memory ")
    [memory] = stored(db, "ana")[1]
    assert (memory.text, memory.occurred_at.date().isoformat()) == ("I like green tea",
                                                                   "2024-05-01")
    assert memory.id in out
    assert main(["--db", str(db), "add", "--user", "ana", "--text", "I like green tea",
                 "--occurred-at", "2024-05-01"]) == OK
    assert capsys.readouterr().out == f"already stored for ana, nothing added: {memory.id}\n"
    assert len(stored(db, "ana")[1]) == 1
    assert main(["--db", str(db), "add", "--user", "ana", "--text", "x",
                 "--occurred-at", "0001-01-01T00:00:00+14:00"]) == BAD_DATA
    assert "outside the years" in capsys.readouterr().err
    assert main(["--db", str(db), "add", "--user", "ana", "--sample",
                 "--occurred-at", "2024-05-01"]) == USAGE
    assert "--occurred-at goes with --text" in capsys.readouterr().err


def test_a_file_added_again_says_what_it_skipped(tmp_path, capsys):
    source, db = tmp_path / "chats.json", tmp_path / "m.sqlite"
    source.write_text(json.dumps(SESSIONS[:1]))
    assert main(["--db", str(db), "add", "--user", "kai", str(source)]) == OK
    capsys.readouterr()
    source.write_text(json.dumps(SESSIONS))  # one session more, the first as it was
    assert main(["--db", str(db), "add", "--user", "kai", str(source)]) == OK
    out = capsys.readouterr().out
    assert out.startswith("added 1 session (1 turn) for kai: ")
    assert out.endswith("; 1 session (2 turns) already stored, skipped\n")
    assert main(["--db", str(db), "add", "--user", "kai", str(source)]) == OK
    assert capsys.readouterr().out == ("nothing added for kai; 2 sessions (3 turns) already "
                                       "stored, skipped\n")
    assert len(stored(db, "kai")[0]) == 3


def test_the_sample_has_questions_whose_evidence_is_in_it():
    data = json.loads(sample_path().read_text())
    ids = {t.id for s in read_sessions(sample_path()) for t in s["turns"]}
    assert data["questions"]
    assert all(set(q["evidence"]) <= ids for q in data["questions"])


def test_users_counts_one_user_in_the_singular(tmp_path, capsys):
    db = tmp_path / "m.sqlite"
    assert main(["--db", str(db), "add", "--user", "maya", "--sample"]) == OK
    capsys.readouterr()
    assert main(["--db", str(db), "users"]) == OK
    assert capsys.readouterr().out.endswith("\n1 user\n")
