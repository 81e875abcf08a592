"""The memory's MCP tools loaded by the frameworks' own MCP adapters, `langchain-mcp-adapters`
and `llama-index-tools-mcp`, each calling `search` on a real `rmm mcp` subprocess."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_helpers import ENV, HttpServer, is_error, rmm  # noqa: E402

from rmm_core import ReflectiveMemory  # noqa: E402

FACT = "Grace's daughter Lina was born on 3 March 2021."
TOKEN = "grace-token-0b7e"


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "m.sqlite"
    with ReflectiveMemory.open(str(path)) as mem:
        mem.add(FACT, user_id="grace")
        mem.add("Grace works night shifts at the hospital.", user_id="grace")
    return path


def stdio_command(db) -> tuple[str, list[str]]:
    command = rmm(db, "--user", "grace")
    return command[0], command[1:]


async def test_langchain_mcp_adapters_search_over_stdio_and_http(db):
    adapters = pytest.importorskip("langchain_mcp_adapters.client")
    command, args = stdio_command(db)
    server = HttpServer(db, "--token", f"{TOKEN}=grace")
    try:
        client = adapters.MultiServerMCPClient({
            "memory": {"transport": "stdio", "command": command, "args": args, "env": ENV},
            "remote": {"transport": "streamable_http", "url": server.url,
                       "headers": {"Authorization": f"Bearer {TOKEN}"}}})
        for name in ("memory", "remote"):
            tools = {t.name: t for t in await client.get_tools(server_name=name)}
            assert {"add", "search", "get", "profile"} <= set(tools)
            answer = await tools["search"].ainvoke({"query": "when was Lina born?", "k": 1})
            assert "3 March 2021" in str(answer), (name, answer)
    finally:
        server.stop()


async def test_llama_index_tools_mcp_search_over_stdio(db):
    mcp_tools = pytest.importorskip("llama_index.tools.mcp")
    command, args = stdio_command(db)
    spec = mcp_tools.McpToolSpec(client=mcp_tools.BasicMCPClient(command, args=args, env=ENV),
                                 allowed_tools=["search", "add"])
    tools = {t.metadata.name: t for t in await spec.to_tool_list_async()}
    assert set(tools) == {"search", "add"}
    output = await tools["search"].acall(query="when was Lina born?", k=1)
    hits = json.loads(output.raw_output.content[0].text)["hits"]
    assert hits[0]["memory_text"] == FACT
    assert not is_error(output.raw_output)

