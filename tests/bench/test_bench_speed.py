"""`rmm bench speed` end to end at small sizes, with the real store and embedder: one bank
against raw faiss with the first search after each new session, many users within a cache
budget, and ingest into a large bank against an empty one."""

from __future__ import annotations

import re

from rmm_core.cli import main


def test_one_bank_against_raw_faiss_and_after_new_sessions(capsys):
    assert main(["bench", "speed", "--memories", "1500", "--queries", "10",
                 "--sessions", "2"]) == 0
    printed = capsys.readouterr().out
    assert "raw faiss IndexFlatIP, same vectors" in printed
    assert re.search(r"RSS after load \+ index: \d+ MiB \(peak so far \d+ MiB\); index \d+ "
                     r"MiB by its own count", printed)
    assert re.search(r"after each of 2 new 2-turn sessions \(end_session p50 \d+ ms\): first "
                     r"search p50 [\d.]+ ms / p95 [\d.]+ ms, a cached search [\d.]+ ms", printed)
    assert "top-20 candidates shared with exhaustive scoring: 100.0%" in printed


def test_many_users_stay_within_the_cache_budget(capsys):
    assert main(["bench", "speed", "--users", "12", "--memories", "20",
                 "--cache-bytes", "400000", "--vocab", "small"]) == 0
    printed = capsys.readouterr().out
    cached = re.search(r"\((\d+) entries cached, ([\d.]+) MiB by their own count\)", printed)
    assert 1 <= int(cached[1]) < 12
    assert float(cached[2]) <= 400000 / 2**20
    assert re.search(r"cold search \(index built from the store\) p50 [\d.]+ ms", printed)


def test_ingest_into_a_large_bank_against_an_empty_one(capsys):
    assert main(["bench", "speed", "--ingest-sessions", "3", "--memories", "500",
                 "--vocab", "small"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"3 more into a bank of 5\d\d memories: [\d.]+ s \(\d+ ms a session\); "
                     r"ratio [\d.]+x", printed)


def test_a_bank_written_earlier_is_searched_again_without_writing(tmp_path, capsys):
    args = ["bench", "speed", "--memories", "600", "--queries", "5", "--sessions", "0",
            "--vocab", "small", "--db", str(tmp_path / "bank.sqlite"), "--keep-bank"]
    assert main(args) == 0
    assert re.search(r"small vocabulary \(exhaustive\); write [\d.]+ s", capsys.readouterr().out)
    assert main(args) == 0
    assert "(exhaustive); kept from an earlier run, load + index" in capsys.readouterr().out
