"""`rmm mcp --http`: streamable HTTP through the SDK's own client, each bearer token bound
to its users; refused without a token, or for another Host (DNS rebinding) or Origin; no
acknowledged write lost to a SIGKILL."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_helpers import ENV, HttpServer, call, http_session, refused, rmm  # noqa: E402

from rmm_core import ReflectiveMemory  # noqa: E402

ALICE, BOB, BOTH = "alice-token-7f3a", "bob-token-91c2", "team-token-55d0"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mcp_http")
    tokens = folder / "tokens.txt"
    tokens.write_text(f"# one line a token\n{BOB}=bob\n")
    started = HttpServer(folder / "m.sqlite", "--token", f"{ALICE}=alice",
                         "--token", f"{BOTH}=alice,bob", "--tokens-file", str(tokens))
    yield started
    started.stop()


async def test_every_tool_over_http(server):
    async with http_session(server.url, ALICE) as s:
        assert {t.name for t in (await s.list_tools()).tools} == \
            {"add", "search", "get", "update", "delete", "history", "profile"}
        [m] = (await call(s, "add", content="I keep bees on the roof."))["added"]
        assert m["user_id"] == "alice"  # the token's only user
        hits = (await call(s, "search", query="what do I keep on the roof?"))["hits"]
        assert hits[0]["id"] == m["id"]
        assert (await call(s, "get", memory_id=m["id"]))["text"] == m["text"]
        await call(s, "update", memory_id=m["id"], text="I keep bees and hens on the roof.")
        assert len((await call(s, "history", memory_id=m["id"]))["versions"]) == 2
        assert (await call(s, "profile"))["memories"] >= 1
        assert "NotFoundError" in await refused(s, "get", memory_id="nope")
        assert "k must be" in await refused(s, "search", query="bees", k=-1)
        assert await call(s, "delete", memory_id=m["id"]) == {"deleted": m["id"]}
        assert "NotFoundError" in await refused(s, "history", memory_id=m["id"])


async def test_two_tokens_cannot_read_each_others_users(server):
    async with http_session(server.url, ALICE) as a, http_session(server.url, BOB) as b:
        [secret] = (await call(a, "add", content="Alice's safe code is 8841."))["added"]
        await call(b, "add", content="Bob's bike lock code is 1234.")
        for tool, arguments in [("search", {"query": "safe code"}),
                                ("get", {"memory_id": secret["id"]}),
                                ("update", {"memory_id": secret["id"], "text": "x"}),
                                ("delete", {"memory_id": secret["id"]}),
                                ("history", {"memory_id": secret["id"]}), ("profile", {}),
                                ("add", {"content": "planted"})]:
            message = await refused(b, tool, user_id="alice", **arguments)
            assert "AccessDenied: this token may not act for user 'alice'" in message
        # with its own user, bob's token finds no trace of alice's memory
        assert "NotFoundError" in await refused(b, "get", memory_id=secret["id"])
        bob_hits = (await call(b, "search", query="safe code 8841", k=10))["hits"]
        assert bob_hits
        assert all(h["user_id"] == "bob" for h in bob_hits)
        assert "8841" in (await call(a, "search", query="safe code"))["hits"][0]["text"]
        assert "AccessDenied" in await refused(a, "search", query="bike", user_id="bob")
    async with http_session(server.url, BOTH) as team:
        assert "one of: alice, bob" in await refused(team, "search", query="code")
        for user in ("alice", "bob"):
            assert (await call(team, "search", query="code", user_id=user))["hits"]


def post(url: str, token: str | None) -> int:
    request = urllib.request.Request(url, data=b"{}", method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_a_request_without_a_valid_token_is_refused(server):
    for token in (None, "", "wrong", ALICE[:-1], ALICE.upper()):
        assert post(server.url, token) == 401, token
    assert post(server.url, ALICE) != 401  # a bad JSON-RPC body, but past the door
    with pytest.raises(BaseException):  # noqa: B017, PT011 - the client's error type varies by version
        async with http_session(server.url, "wrong") as s:
            await s.list_tools()


def post_as(address: str, port: int, host: str, token: str, origin: str | None = None) -> int:
    """The status of an `initialize` POST to `address`:`port` naming `host` as its Host."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}})
    conn = http.client.HTTPConnection(address, port, timeout=60)
    try:
        conn.request("POST", "/mcp", body=body, headers={
            "Host": host, "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}",
            **({"Origin": origin} if origin else {})})
        return conn.getresponse().status
    finally:
        conn.close()


def test_malformed_host_with_userinfo_is_refused_before_the_token(server):
    """`Host: 127.0.0.1:PORT@evil.example` passed the SDK's prefix match on 127.0.0.1:."""
    port = server.port
    assert post_as("127.0.0.1", port, f"127.0.0.1:{port}", ALICE) == 200
    assert post_as("127.0.0.1", port, f"localhost:{port}", ALICE) == 200
    for host in (f"127.0.0.1:{port}@evil.example", f"[::1]:{port}x", f"127.0.0.1:{port}:1",
                 f"evil.example:{port}", f"127.0.0.1:{port + 1}"):
        assert post_as("127.0.0.1", port, host, ALICE) == 421, host
    assert post_as("127.0.0.1", port, f"127.0.0.1:{port}", ALICE,
                   origin="http://evil.example") == 403


def test_dns_rebinding_via_127_0_0_2_is_refused(tmp_path):
    """DNS rebinding via 127.0.0.2: the SDK checks the Host only on 127.0.0.1, localhost and
    ::1, so on 127.0.0.2 a request naming evil.example reached the token check and tools."""
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(rmm(tmp_path / "m.sqlite", "--http", "--host", "127.0.0.2",
                                   "--port", str(port), "--token", f"{ALICE}=alice"),
                               env=ENV, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.2", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("rmm mcp --http on 127.0.0.2 did not start") from None
                time.sleep(0.2)
        assert post_as("127.0.0.2", port, f"127.0.0.2:{port}", ALICE) == 200
        assert post_as("127.0.0.2", port, f"evil.example:{port}", ALICE) == 421
        assert post_as("127.0.0.2", port, f"127.0.0.2:{port}", ALICE,
                       origin=f"http://evil.example:{port}") == 403
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_concurrent_sessions_and_calls(server):
    async def client(token: str, user: str, n: int) -> list[str]:
        async with http_session(server.url, token) as s:
            await asyncio.gather(*(call(s, "add", content=f"{user} note {n}-{i}: tag{n}x{i}",
                                        user_id=user) for i in range(3)))
            found = await call(s, "search", query=f"tag{n}x1", user_id=user, k=10)
            return [h["text"] for h in found["hits"]]

    results = await asyncio.gather(*(client(BOTH, ("alice", "bob")[n % 2], n)
                                     for n in range(6)))
    for n, texts in enumerate(results):
        user = ("alice", "bob")[n % 2]
        assert any(f"tag{n}x1" in t for t in texts)
        assert all(user in t for t in texts
                                                             if "note" in t)


@pytest.mark.parametrize("args,message", [
    (["--http", "--host", "0.0.0.0"], "on 0.0.0.0, a non-loopback address, needs a bearer"),
    (["--http"], "on this machine needs a bearer token"),
    (["--token", "t=alice"], "--token and --tokens-file are for --http"),
    (["--http", "--token", "t"], "give a token as TOKEN=user1,user2"),
    (["--http", "--port", "70000", "--token", "t=a"], "--port must be 0-65535"),
])
def test_unsafe_or_bad_starts_are_refused(tmp_path, args, message):
    done = subprocess.run(rmm(tmp_path / "m.sqlite", *args), capture_output=True, text=True,
                          timeout=120, env=ENV)
    assert done.returncode == 2, done.stderr[-2000:]
    assert message in done.stderr, done.stderr[-2000:]


def test_a_missing_extra_names_the_install_command(tmp_path):
    hide = ("import sys; sys.modules['mcp'] = None; from rmm_core.cli import main; "
            f"sys.exit(main(['--db', {str(tmp_path / 'm.sqlite')!r}, 'mcp']))")
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True,
                          timeout=120, env=ENV)
    assert done.returncode == 2
    assert 'pip install "reflective-memory[mcp]"' in done.stderr, done.stderr[-2000:]


async def test_a_killed_http_server_loses_no_acknowledged_add(tmp_path):
    db = tmp_path / "m.sqlite"
    server = HttpServer(db, "--token", f"{ALICE}=alice")
    try:
        async with http_session(server.url, ALICE) as s:
            [m] = (await call(s, "add", content="The boat is moored at pier 9."))["added"]
            server.kill()
    except BaseException:  # the session's close meets a dead server
        pass
    finally:
        server.stop()
    with ReflectiveMemory.open(str(db)) as mem:
        assert mem.search("where is the boat", user_id="alice")[0].memory.id == m["id"]


def rpc(url: str, token: str, body: dict | None, session: str | None = None,
        method: str = "POST") -> tuple[int, dict, str]:
    """One JSON-RPC message over plain HTTP (or a DELETE, with no body): (status, headers,
    body)."""
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {token}",
               **({"Mcp-Session-Id": session} if session else {})}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def open_session(url: str, token: str) -> str:
    """A session opened over plain HTTP with `token`: its `mcp-session-id`."""
    status, headers, _ = rpc(url, token, {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "probe", "version": "1"}}})
    assert status == 200
    session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
    rpc(url, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


SEARCH = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "search", "arguments": {"query": "locker combination", "user_id": "alice"}}}


async def test_another_tokens_session_id_gives_no_access_to_its_users(server):
    async with http_session(server.url, ALICE) as a:
        await call(a, "add", content="Alice's locker combination is 3-1-4.")
    session = open_session(server.url, ALICE)
    status, _, body = rpc(server.url, BOB, SEARCH, session)  # bob's token, alice's session
    assert "3-1-4" not in body
    assert status == 404, (status, body[:300])
    status, _, body = rpc(server.url, ALICE, SEARCH, session)
    assert status == 200
    assert "3-1-4" in body


@pytest.mark.parametrize("other", [BOB, BOTH])
def test_a_session_is_ended_only_by_the_token_that_opened_it(server, other):
    """The attack: `DELETE /mcp` with a session's `mcp-session-id` ended it for any valid
    token, one bound to other users or to the same ones alike. The SDK serves a session only
    to the principal that opened it, and each token is now a principal of its own: another
    token gets 404, as for an unknown session, and the session goes on."""
    session = open_session(server.url, ALICE)
    status, _, body = rpc(server.url, other, None, session, method="DELETE")
    assert status == 404, (status, body[:300])
    assert rpc(server.url, other, SEARCH, session)[0] == 404
    status, _, body = rpc(server.url, ALICE, SEARCH, session)
    assert status == 200, body[:300]
    assert rpc(server.url, ALICE, None, session, method="DELETE")[0] == 200
    assert rpc(server.url, ALICE, SEARCH, session)[0] == 404  # ended by its own token


def test_the_loop_is_uvloop_when_installed_and_asyncio_without(monkeypatch):
    import anyio

    from rmm_core.mcp.server import loop_options

    async def loop_module() -> str:
        return type(asyncio.get_running_loop()).__module__

    pytest.importorskip("uvloop", reason="uvloop is not installed (the mcp extra brings it)")
    assert anyio.run(loop_module, backend_options=loop_options()).startswith("uvloop")
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if it were not installed
    assert loop_options() == {"use_uvloop": False}
    assert anyio.run(loop_module, backend_options=loop_options()).startswith("asyncio")
