"""`rmm bench supersede --mentions`: the base-rate set loads as it promises, a malformed line
names itself, and the bench runs through the public API with the real embedder."""

from __future__ import annotations

import json

import pytest

from rmm_core.bench.mentions import COUNTS, evaluate, load_facts
from rmm_core.cli import main
from rmm_core.errors import InvalidInputError

GOLF = {"id": "t-1", "lang": "en", "kind": "vehicle", "speaker": "user",
        "fact": "I drive a blue Golf, had it since 2019.", "question": "What car do I drive?",
        "mentions": [{"text": text, "type": "complaint"} for text in [
            "The Golf made that grinding noise again, garage on Monday.",
            "washed the golf today, it's actually blue again lol",
            "golf needs new tyres before winter, ugh",
            "left the golf at my mum's while we're away for the weekend",
            "the golf's air con died again, so hot"] * 4],
        "change": "Sold the Golf last week, I'm driving a secondhand Model 3 now.",
        "changed_question": "What car do I drive?"}


def test_the_packaged_set_holds_what_it_promises():
    facts = load_facts()
    assert len(facts) >= 60
    assert sum(f.lang == "en" for f in facts) >= 20
    assert len({f.lang for f in facts}) >= 10
    assert all(len(f.mentions) >= max(COUNTS) for f in facts)
    assert all(len({t for _, t in f.mentions}) >= 8 for f in facts)  # kinds of mention
    assert sum(f.speaker != "user" for f in facts) >= 6  # two friends talking


@pytest.mark.parametrize("bad, error", [
    ({"colour": "red"}, "unknown field"),
    ({"mentions": GOLF["mentions"][:5]}, "fewer than"),
    ({"fact": " "}, "empty"),
])
def test_a_malformed_line_names_itself(tmp_path, bad, error):
    path = tmp_path / "facts.jsonl"
    path.write_text(json.dumps(GOLF) + "\n" + json.dumps({**GOLF, **bad}) + "\n")
    with pytest.raises(InvalidInputError, match=rf"facts\.jsonl:2: .*{error}"):
        load_facts(path)


def test_mentions_of_the_car_leave_it_current_and_first_and_a_sale_is_found(tmp_path,
                                                                            embedder):
    """After 1 and 5 everyday mentions the car is neither marked nor pushed below one;
    after the same mentions and a sale, the sale comes first and the Golf is marked."""
    path = tmp_path / "facts.jsonl"
    path.write_text(json.dumps(GOLF) + "\n")
    figures = evaluate(load_facts(path), embedder, counts=(1, 5))
    for count in (1, 5):
        row = figures["all"][count]
        assert row["marked"] == 0.0, (count, row)
        assert row["pushed_down"] == 0.0, (count, row)
        assert row["outranked"] == 0.0, (count, row)
        assert row["current_first"] == 100.0, (count, row)
        assert row["stale_marked"] == 100.0, (count, row)


def test_the_command_prints_a_row_per_count(tmp_path, capsys):
    data, out = tmp_path / "facts.jsonl", tmp_path / "figures.json"
    data.write_text(json.dumps(GOLF) + "\n")
    assert main(["bench", "supersede", "--mentions", "--data", str(data),
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "stable marked" in printed
    assert "change current first" in printed
    figures = json.loads(out.read_text())
    assert figures["facts"] == 1
    assert figures["counts"] == list(COUNTS)
    assert set(figures["all"]) == {str(c) for c in COUNTS}  # json keys
    assert [row["id"] for row in figures["outcomes"]] == ["t-1"]
