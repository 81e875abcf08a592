"""Who may act for which user (`Access`), tokens as given on the command line or in a file,
and the JSON a memory becomes: plain rules, no server."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from rmm_core.errors import InvalidInputError
from rmm_core.mcp.access import Access, AccessDenied, parse_tokens
from rmm_core.mcp.payload import hit_dict, memory_dict
from rmm_core.mcp.server import check_bind, is_loopback
from rmm_core.types import Memory, MemoryHit, MemoryVersion

TOKENS = {"tok-a": frozenset({"alice"}), "tok-ab": frozenset({"alice", "bob"})}


def test_stdio_serves_the_user_each_call_names():
    access = Access()
    assert access.user_for("carol") == "carol"
    with pytest.raises(InvalidInputError, match="user_id is required"):
        access.user_for(None)
    with pytest.raises(InvalidInputError, match="user_id"):
        access.user_for("")


def test_a_fixed_user_is_the_default_and_the_only_one():
    access = Access(fixed_user="alice")
    assert access.user_for(None) == access.user_for("alice") == "alice"
    with pytest.raises(AccessDenied, match="serves user 'alice' only, not 'bob'"):
        access.user_for("bob")


def test_a_token_acts_only_for_its_users():
    access = Access(tokens=TOKENS)
    assert access.user_for(None, "tok-a") == "alice"
    assert access.user_for("bob", "tok-ab") == "bob"
    with pytest.raises(AccessDenied, match="may not act for user 'bob'"):
        access.user_for("bob", "tok-a")
    with pytest.raises(InvalidInputError, match=r"required \(one of: alice, bob\)"):
        access.user_for(None, "tok-ab")
    for token in (None, "tok", "tok-a ", "TOK-A"):
        with pytest.raises(AccessDenied, match="valid bearer token"):
            access.user_for("alice", token)


def test_each_token_is_known_by_its_own_number():
    """The HTTP layer names each token's principal by its number (an HTTP session serves
    only the token that opened it), never by its text."""
    access = Access(tokens=TOKENS)
    numbers = [access.token_number(token) for token in TOKENS]
    assert numbers == list(range(len(TOKENS)))
    for token in (None, "tok", "tok-a ", "TOK-A"):
        assert access.token_number(token) is None


def test_a_fixed_user_narrows_every_token():
    access = Access(fixed_user="bob", tokens=TOKENS)
    assert access.user_for(None, "tok-ab") == "bob"
    with pytest.raises(AccessDenied):
        access.user_for("alice", "tok-ab")
    with pytest.raises(InvalidInputError, match="user_id is required"):
        access.user_for(None, "tok-a")  # alice's token on bob's server serves nobody


def test_tokens_from_flags_and_files(tmp_path):
    path = tmp_path / "tokens.txt"
    path.write_text("# team tokens\n\nt1 = alice, bob\nt2=carol\n")
    tokens = parse_tokens(["t1=dave", "t3=erin"], [path])
    assert tokens == {"t1": {"alice", "bob", "dave"}, "t2": {"carol"}, "t3": {"erin"}}


@pytest.mark.parametrize("spec", ["t1", "=alice", "t1=", "t1= , ", "t 1=alice", "t1=a\x00"])
def test_a_malformed_token_is_refused_without_echoing_it(spec):
    with pytest.raises(InvalidInputError) as caught:
        parse_tokens([spec])
    assert "--token" in str(caught.value) or "user_id" in str(caught.value)


def test_a_missing_tokens_file_is_named(tmp_path):
    with pytest.raises(InvalidInputError, match="cannot read tokens file .*nope.txt"):
        parse_tokens([], [tmp_path / "nope.txt"])


def test_a_tokens_file_of_binary_bytes_is_a_typed_error_not_a_traceback(tmp_path):
    """A non-UTF-8 tokens file used to escape as UnicodeDecodeError (exit 1, a traceback)."""
    path = tmp_path / "tokens.txt"
    path.write_bytes(b"\xff\xfe t1=alice\n")
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        parse_tokens([], [path])


@pytest.mark.parametrize("host,loopback", [("127.0.0.1", True), ("127.0.0.2", True),
                                           ("::1", True), ("[::1]", True),
                                           ("localhost", True), ("0.0.0.0", False),
                                           ("192.168.1.5", False), ("::", False),
                                           ("example.org", False)])
def test_loopback_addresses(host, loopback):
    assert is_loopback(host) is loopback


def test_http_without_a_token_is_refused_on_any_address():
    check_bind(Access(), http=False, host="0.0.0.0")  # stdio: no address at all
    check_bind(Access(tokens=TOKENS), http=True, host="0.0.0.0")
    with pytest.raises(InvalidInputError, match="0.0.0.0, a non-loopback address"):
        check_bind(Access(), http=True, host="0.0.0.0")
    with pytest.raises(InvalidInputError, match="needs a bearer token"):
        check_bind(Access(fixed_user="alice"), http=True, host="127.0.0.1")


def test_a_memory_becomes_json_with_its_validity_and_versions():
    at = datetime(2024, 5, 1, tzinfo=timezone.utc)
    memory = Memory(id="m2", user_id="u", text="Lives in Porto.", key="porto", refs=["s:1"],
                    session_ids=["s"], occurred_at=at, created_at=at, updated_at=at,
                    versions=[MemoryVersion(1, "Lives in Porto.", ("s:1",), "created", at)],
                    attrs={"score": float("nan"), "tags": {"x"}}, metadata={"n": (1, 2)},
                    supersedes=["m1"], conflicts=["m3"])
    out = memory_dict(memory, versions=True)
    json.dumps(out, allow_nan=False)
    assert out["valid_from"] == out["occurred_at"] == "2024-05-01T00:00:00+00:00"
    assert out["current"] is True
    assert out["valid_to"] is None
    assert out["superseded_by"] is None
    assert out["supersedes"] == ["m1"]
    assert out["conflicts"] == ["m3"]
    assert out["attrs"] == {"score": None, "tags": ["x"]}
    assert out["metadata"] == {"n": [1, 2]}
    [version] = out["versions"]
    assert (version["version"], version["reason"], version["refs"], version["at"]) == \
        (1, "created", ["s:1"], "2024-05-01T00:00:00+00:00")
    assert "versions" not in memory_dict(memory)
    hit = hit_dict(MemoryHit(memory, 0.8, "[1 May 2024] Lives in Porto.", 0))
    assert (hit["id"], hit["score"], hit["rank"], hit["refs"]) == ("m2", 0.8, 0, ["s:1"])
    assert hit["text"].startswith("[1 May")
    assert hit["memory_text"] == "Lives in Porto."


def test_a_fixed_agent_or_run_is_the_default_and_the_only_one():
    access = Access(fixed_scope={"agent_id": "planner"})
    assert access.scope("agent_id", None) == access.scope("agent_id", "planner") == "planner"
    assert access.scope("run_id", None) is None
    assert access.scope("run_id", "r1") == "r1"
    with pytest.raises(AccessDenied, match="serves agent_id 'planner' only, not 'coder'"):
        access.scope("agent_id", "coder")


def test_metadata_cannot_move_a_memory_out_of_a_fixed_scope():
    """The attack: `update(metadata={"agent_id": null})` passed as "not asked" and cleared
    the server's agent from the memory. Null, another value, or another type is refused."""
    access = Access(fixed_scope={"agent_id": "planner", "run_id": "r1"})
    access.keeps_scope({"agent_id": "planner", "run_id": "r1", "topic": None})
    access.keeps_scope({"topic": "ops"})
    for name in ("agent_id", "run_id"):
        with pytest.raises(AccessDenied, match=f"cannot set {name} to null"):
            access.keeps_scope({name: None})
    with pytest.raises(AccessDenied, match="serves agent_id 'planner' only, not 'coder'"):
        access.keeps_scope({"agent_id": "coder"})
    with pytest.raises(AccessDenied, match=r"serves run_id 'r1' only, not \['r1'\]"):
        access.keeps_scope({"run_id": ["r1"]})
    Access().keeps_scope({"agent_id": None})  # nothing fixed: the memory's own business
