"""`rmm bench endings`: every change the write rules recorded in a conversation, listed with
what ended it, through the public API and the packaged embedder."""

from __future__ import annotations

import json

from rmm_core.cli import main

LINES = [
    {"conversation": "ana", "session": "s1", "date": "2024-01-10T09:00",
     "turns": [{"id": "1", "speaker": "user", "text": "I live in Leeds, near the park."}]},
    {"conversation": "ana", "session": "s2", "date": "2024-03-02T09:00",
     "turns": [{"id": "2", "speaker": "user", "text": "Leeds traffic was awful again today."}]},
    {"conversation": "ana", "session": "s3", "date": "2024-06-15T09:00",
     "turns": [{"id": "3", "speaker": "user", "text": "We moved from Leeds to York in May."}]},
    {"conversation": "ana", "question": "Where do I live?", "evidence": ["3"]},
]


def test_the_command_lists_each_ending_beside_what_ended_it(tmp_path, capsys):
    data, out = tmp_path / "chat.jsonl", tmp_path / "endings.json"
    data.write_text("\n".join(json.dumps(line) for line in LINES) + "\n")
    assert main(["bench", "endings", "--dataset", "jsonl", "--data", str(data),
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ana: 3 memories, 1 ended on write, at most 1 by one memory" in printed
    found = json.loads(out.read_text())["ana"]
    (ending,) = found["list"]
    assert ending["old_refs"] == ["1"]  # the home, not the complaint about its traffic
    assert ending["new_refs"] == ["3"]
