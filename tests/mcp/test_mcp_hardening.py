"""Attacks on `rmm mcp`, each against the real server on a real SQLite file: moving or
reaching a memory outside the server's fixed agent, one call writing minutes of work,
Infinity (however spelt) slipped into metadata, deeply nested JSON-RPC bodies (stdio and
HTTP); and what a client is told: the server's version, a conversation's refs and date."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import urllib.error
import urllib.request
from datetime import datetime, timezone

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_helpers import ENV, HttpServer, call, refused, rmm, stdio_session  # noqa: E402

import rmm_core  # noqa: E402
from rmm_core import ReflectiveMemory  # noqa: E402


class RawStdio:
    """`rmm mcp` over stdio spoken to line by line, so that a test can send bytes the SDK's
    client would never write."""

    def __init__(self, db, *args: str) -> None:
        self.process = subprocess.Popen(rmm(db, *args), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=ENV)
        self.buffer = b""
        self.initialized = self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}})
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def send(self, line: str) -> None:
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict:
        """The next message, within 120 s (an unanswered request fails, not hangs)."""
        out = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            assert select.select([out], [], [], 120)[0], "no answer in 120 s"
            chunk = os.read(out, 1 << 16)
            assert chunk, f"the server closed stdout: {self.process.stderr.read()[-2000:]}"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def request(self, method: str, params: dict, raw: str | None = None) -> dict:
        """Send a request (as `raw` text when given) and return its answer."""
        self.next_id = getattr(self, "next_id", 0) + 1
        self.send(raw if raw is not None else json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}))
        while True:
            message = self.receive()
            if "id" in message:
                return message

    def close(self) -> str:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        return self.process.stderr.read().decode("utf-8", "replace")


def tool_text(answer: dict) -> str:
    return answer["result"]["content"][0]["text"]


async def test_update_cannot_move_a_memory_into_another_agents_scope(tmp_path):
    """The attack: with `--agent-id agentA`, `update(metadata={"agent_id": "agentB"})`
    succeeded and moved the memory into agentB's scope."""
    db = tmp_path / "m.sqlite"
    async with stdio_session(db, "--user", "u", "--agent-id", "agentA") as s:
        [m] = (await call(s, "add", content="The build server password rotates monthly."))[
            "added"]
        for metadata in ({"agent_id": "agentB"}, {"agent_id": "agentB", "topic": "ops"}):
            message = await refused(s, "update", memory_id=m["id"], text="moved",
                                    metadata=metadata)
            assert "AccessDenied: this server serves agent_id 'agentA' only, not 'agentB'" \
                in message
        kept = await call(s, "update", memory_id=m["id"], text=m["text"],
                          metadata={"agent_id": "agentA", "topic": "ops"})
        assert kept["metadata"] == {"agent_id": "agentA", "topic": "ops"}
    with ReflectiveMemory.open(str(db)) as mem:
        stored = mem.get(m["id"], user_id="u")
    assert stored.metadata["agent_id"] == "agentA"
    assert len(stored.versions) == 2  # the refused updates wrote nothing


async def test_update_cannot_clear_the_fixed_agent_or_run_with_null(tmp_path):
    """The attack: with `--agent-id agentA`, `update(metadata={"agent_id": null})` was read
    as "not asked" and cleared the agent, moving the memory out of the server's scope (and
    `run_id: null` under `--run-id` alike). Refused; the memory keeps its scope."""
    db = tmp_path / "m.sqlite"
    async with stdio_session(db, "--user", "u", "--agent-id", "agentA", "--run-id", "r1") as s:
        [m] = (await call(s, "add", content="The staging database restarts on Fridays."))[
            "added"]
        for name in ("agent_id", "run_id"):
            message = await refused(s, "update", memory_id=m["id"], text="moved",
                                    metadata={name: None, "topic": "ops"})
            assert f"AccessDenied: this server serves {name} " in message
            assert f"metadata cannot set {name} to null" in message
        assert (await call(s, "get", memory_id=m["id"]))["text"] == m["text"]
    with ReflectiveMemory.open(str(db)) as mem:
        stored = mem.get(m["id"], user_id="u")
    assert stored.metadata == {"agent_id": "agentA", "run_id": "r1"}
    assert len(stored.versions) == 1  # the refused updates wrote nothing


async def test_a_fixed_agent_cannot_reach_another_agents_memory_by_its_id(tmp_path):
    """The attack: get, update, delete and history took any memory id of the user, so an
    agent fixed to agentA could read, rewrite or erase agentB's memories; and `profile`
    counted them. Outside the scope a memory is as absent as another user's."""
    db = tmp_path / "m.sqlite"
    with ReflectiveMemory.open(str(db)) as mem:
        [theirs] = mem.add("agentB's API key ends in 7f3a.", user_id="u", agent_id="agentB")
        [untagged] = mem.add("A memory without an agent.", user_id="u")
    async with stdio_session(db, "--user", "u", "--agent-id", "agentA") as s:
        [mine] = (await call(s, "add", content="agentA's deploy day is Tuesday."))["added"]
        for other in (theirs.id, untagged.id):
            for tool, arguments in [("get", {}), ("history", {}), ("delete", {}),
                                    ("update", {"text": "overwritten"})]:
                message = await refused(s, tool, memory_id=other, **arguments)
                assert f"NotFoundError: no memory {other!r} for this user" in message, tool
        assert (await call(s, "get", memory_id=mine["id"]))["text"] == mine["text"]
        assert (await call(s, "profile"))["memories"] == 1
    with ReflectiveMemory.open(str(db)) as mem:
        assert mem.get(theirs.id, user_id="u").text == theirs.text
        assert len(mem.memories(user_id="u")) == 3


def test_forget_is_not_offered_to_a_server_fixed_to_one_agent(tmp_path):
    """The attack: `--agent-id agentA --allow-forget` let agentA's client erase every
    agent's memories of the user. Refused at start, exit 2."""
    done = subprocess.run(rmm(tmp_path / "m.sqlite", "--agent-id", "agentA",
                              "--allow-forget"), env=ENV, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "--allow-forget cannot go with --agent-id or --run-id" in done.stderr


async def test_an_oversized_add_or_update_is_refused_naming_the_limit(tmp_path):
    """The attack: a 2.2 MB `add` (under the SDK's 4 MB cap) became 5,000 memories and held
    the server past 600 s. A call now writes at most --max-call-chars characters."""
    db = tmp_path / "m.sqlite"
    big = "I walked to the harbour and counted the boats. " * 48  # 2,256 characters
    async with stdio_session(db, "--user", "u", "--max-call-chars", "2000") as s:
        message = await refused(s, "add", content=big)
        assert "InvalidInputError: the text has 2,256 characters; this server takes at " \
               "most 2,000 in one call (rmm mcp --max-call-chars)" in message
        messages = [{"role": "user", "content": big[:600]}] * 4
        assert "at most 2,000" in await refused(s, "add", content=messages)
        assert "at most 100 in one call" in await refused(s, "add", content=[
            {"role": "user", "content": "hi"}] * 101)
        assert "metadata takes" in await refused(s, "add", content="a fact",
                                                 metadata={"blob": "x" * 20_000})
        [m] = (await call(s, "add", content=big[:47]))["added"]
        assert "at most 2,000" in await refused(s, "update", memory_id=m["id"], text=big)
    with ReflectiveMemory.open(str(db)) as mem:
        assert [x.id for x in mem.memories(user_id="u")] == [m["id"]]
        assert len(mem.get(m["id"], user_id="u").versions) == 1


async def test_a_search_listing_a_million_filter_values_is_refused(tmp_path):
    """The attack: `filters={"x": [0, 1, ..., 10**6]}` (under the 4 MiB cap) is compared with
    every candidate holding `x`, one value at a time: minutes of CPU for one search."""
    async with stdio_session(tmp_path / "m.sqlite", "--user", "u") as s:
        await call(s, "add", content="The spare key is under the blue pot.",
                   metadata={"x": 5})
        message = await refused(s, "search", query="key", filters={"x": list(range(10**5))})
        assert "InvalidInputError: filters list 100,000 values; at most 100" in message
        found = await call(s, "search", query="key", filters={"x": list(range(100))})
        assert len(found["hits"]) == 1


def test_infinity_in_metadata_is_refused_not_stored_as_null(tmp_path):
    """The attack: `metadata {"k": Infinity}` (Python's json writes it) was stored as null,
    which the Python API refuses; now the message gets a parse error and nothing is
    written. NaN and -Infinity alike."""
    db = tmp_path / "m.sqlite"
    server = RawStdio(db, "--user", "u")
    try:
        for constant in ("Infinity", "-Infinity", "NaN"):
            raw = ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": '
                   '"add", "arguments": {"content": "I like tea.", "metadata": {"k": '
                   f'{constant}}}}}}}}}')
            answer = server.request("tools/call", {}, raw=raw)
            assert answer["id"] == 7
            assert answer["error"]["code"] == -32700
            assert f"{constant.lstrip('-')} is not a JSON number" in answer["error"]["message"]
        fine = server.request("tools/call", {"name": "add", "arguments": {
            "content": "I like tea.", "metadata": {"k": 1e300}}})
        assert json.loads(tool_text(fine))["added"][0]["metadata"] == {"k": 1e300}
    finally:
        server.close()
    with ReflectiveMemory.open(str(db)) as mem:
        assert [m.metadata for m in mem.memories(user_id="u")] == [{"k": 1e300}]


def test_a_number_beyond_a_float_is_refused_not_stored_as_null_or_dropped(tmp_path):
    """The attack: `1e999` is valid JSON that Python reads as infinity; in metadata it was
    stored as null, as `min_score` it was silently dropped. However the number is spelt (an
    exponent, 400 digits), the message gets a parse error naming it and nothing is
    written; the server goes on."""
    db = tmp_path / "m.sqlite"
    server = RawStdio(db, "--user", "u")
    try:
        for number in ("1e999", "-1E400", "1" + "0" * 400, "9" * 5000):
            raw = ('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": '
                   '"add", "arguments": {"content": "I like tea.", "metadata": {"k": '
                   f'{number}}}}}}}}}')
            answer = server.request("tools/call", {}, raw=raw)
            assert answer["id"] == 8
            assert answer["error"]["code"] == -32700
            assert "beyond a 64-bit float's range (read as infinity)" in \
                answer["error"]["message"]
        raw = ('{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": '
               '"search", "arguments": {"query": "tea", "min_score": 1e999}}}')
        answer = server.request("tools/call", {}, raw=raw)
        assert answer["id"] == 9
        assert "the number 1e999, beyond a 64-bit float's range" in answer["error"]["message"]
        assert server.request("ping", {})["result"] == {}
    finally:
        log = server.close()
    assert "Traceback" not in log
    with ReflectiveMemory.open(str(db)) as mem:
        assert mem.memories(user_id="u") == []


def test_a_deeply_nested_message_over_stdio_is_a_parse_error_and_the_server_goes_on(
        tmp_path):
    """The attack: 100,000 nested `[` in a request's arguments; the SDK logged an internal
    error and never answered the request."""
    server = RawStdio(tmp_path / "m.sqlite", "--user", "u")
    try:
        raw = ('{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "add",'
               ' "arguments": {"content": "x", "metadata": {"k": ' + "[" * 100_000 +
               "]" * 100_000 + "}}}}")
        answer = server.request("tools/call", {}, raw=raw)
        assert answer["id"] == 9
        assert "nests deeper than 64 levels" in answer["error"]["message"]
        assert server.request("ping", {})["result"] == {}
    finally:
        log = server.close()
    assert "Traceback" not in log


@pytest.fixture(scope="module")
def http_server(tmp_path_factory):
    started = HttpServer(tmp_path_factory.mktemp("hard") / "m.sqlite", "--token", "tok=u")
    yield started
    started.stop()


def post(server: HttpServer, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(server.url, data=body, method="POST", headers={
        "Authorization": "Bearer tok", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_a_deeply_nested_http_body_is_400_not_a_500_with_a_traceback(http_server, opening):
    """The attack: a deeply nested JSON-RPC body gave HTTP 500 and a RecursionError
    traceback in the server log."""
    body = (b'{"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"x": '
            + opening.encode() * 100_000 + b"}")
    status, answer = post(http_server, body)
    assert status == 400
    assert answer["error"]["code"] == -32700
    assert answer["id"] == 3
    assert "nests deeper" in answer["error"]["message"]
    assert "RecursionError" not in http_server.stderr()
    assert "Traceback" not in http_server.stderr()


@pytest.mark.parametrize(("number", "reason"), [
    ("Infinity", "Infinity is not a JSON number"),
    ("1e999", "the number 1e999, beyond a 64-bit float's range")])
def test_infinity_over_http_is_400(http_server, number, reason):
    """Infinity over HTTP, however spelt: refused before the SDK would read it as null."""
    body = (b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "add", '
            b'"arguments": {"content": "x", "metadata": {"k": ' + number.encode() + b'}}}}')
    status, answer = post(http_server, body)
    assert status == 400
    assert answer["id"] == 4
    assert reason in answer["error"]["message"]


def test_server_info_names_this_packages_version(tmp_path):
    """`server_info.version` was empty (mcp 2) or the SDK's own (mcp 1)."""
    server = RawStdio(tmp_path / "m.sqlite")
    server.close()
    assert server.initialized["result"]["serverInfo"] == {
        "name": "reflective-memory", "version": rmm_core.__version__}


async def test_a_conversation_without_timestamps_gets_readable_refs_and_the_call_date(
        tmp_path):
    """Turns added without timestamps had refs like `<uuid hex>:1` and memories no date;
    now the session is named for the day of the call and dated by it, as a session with a
    start is in the library."""
    today = datetime.now(timezone.utc)
    messages = [{"role": "user", "content": "I just started learning the cello."},
                {"role": "assistant", "content": "Lovely, practise a little every day."}]
    async with stdio_session(tmp_path / "m.sqlite", "--user", "u") as s:
        [m] = (await call(s, "add", content=messages))["added"]
        dated = (await call(s, "add", content=[{"role": "user", "content": "My sister Ana "
                                                "moved to Porto."}],
                            occurred_at="2024-05-01"))["added"]
        hits = (await call(s, "search", query="which instrument?", k=1))["hits"]
    [session] = m["session_ids"]
    assert re.fullmatch(rf"mcp-{today.date().isoformat()}-[0-9a-f]{{16}}", session)
    assert m["refs"] == [f"{session}:1", f"{session}:2"]
    assert m["occurred_at"][:10] == today.date().isoformat()
    assert hits[0]["text"].startswith(f"[{today.day} {today:%B %Y}]")
    assert dated[0]["session_ids"][0].startswith("mcp-2024-05-01-")
    assert dated[0]["occurred_at"].startswith("2024-05-01")


def test_help_names_the_call_limit():
    """The limit is documented where an operator looks first."""
    out = subprocess.run([sys.executable, "-m", "rmm_core.cli", "mcp", "--help"], env=ENV,
                         capture_output=True, text=True, timeout=120).stdout
    assert "--max-call-chars" in out
