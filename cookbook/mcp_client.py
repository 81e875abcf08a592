"""The memory as an MCP server, offline: start `rmm mcp` over stdio, as Claude Desktop,
Cursor or an agent framework would, and call its tools with the MCP SDK's own client.

Run: python cookbook/mcp_client.py   (needs only `pip install "reflective-memory[mcp]"`)
"""

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main(db: Path) -> None:
    # `rmm mcp --user maya`, run with this Python so that no PATH lookup is needed
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "rmm_core.cli", "--db", str(db), "mcp",
                                      "--user", "maya"],
        env={**os.environ, "HF_HUB_OFFLINE": "1"})
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        print("tools:", ", ".join(t.name for t in tools.tools))

        async def call(tool: str, **arguments) -> dict:
            result = await session.call_tool(tool, arguments)
            return json.loads(result.content[0].text)

        fact = await call("add", content="My cat Pixel is scared of the vacuum cleaner.")
        print("added a fact:", fact["added"][0]["text"])
        chat = await call("add", content=[
            {"role": "user", "content": "I'm training for the Lisbon half marathon in May."},
            {"role": "assistant", "content": "Great goal! How many runs a week?"},
            {"role": "user", "content": "Three: two easy runs and a long one on Sundays."}])
        print(f"added a conversation, reflected now: {chat['added'][0]['text']!r:.60} "
              f"from turns {', '.join(chat['added'][0]['refs'])}")
        for question in ("What is my cat afraid of?", "Which race am I training for?"):
            hits = (await call("search", query=question, k=2))["hits"]
            print(f"\nQ: {question}")
            for hit in hits:
                print(f"  [{hit['score']:.2f}] {' '.join(hit['text'].split())[:100]}")
        refused = await session.call_tool("search", {"query": "cat", "user_id": "someone"})
        print("\nanother user:", refused.content[0].text)


with tempfile.TemporaryDirectory() as folder:
    asyncio.run(main(Path(folder) / "memory.sqlite"))
