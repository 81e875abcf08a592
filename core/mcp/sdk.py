"""The MCP SDK's names this package uses, from whichever major version is installed: mcp 2
renamed `FastMCP` to `MCPServer`, while `langchain-mcp-adapters` and `llama-index-tools-mcp`
still pin mcp 1."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import MissingDependencyError


@dataclass(frozen=True)
class SDK:
    server: Any
    """`MCPServer` (mcp 2) or `FastMCP` (mcp 1)."""
    context: Any
    """The `Context` type a tool asks for by annotation."""
    tool_error: type[Exception]
    """Raised by a tool: the call fails with its message, the server goes on."""
    major: int


def load() -> SDK:
    """The installed SDK; `MissingDependencyError` naming the extra when there is none."""
    try:
        from mcp.server.mcpserver import Context, MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        pass
    else:
        return SDK(MCPServer, Context, ToolError, 2)
    try:
        from mcp.server.fastmcp import Context, FastMCP
        from mcp.server.fastmcp.exceptions import ToolError
    except ImportError as exc:
        raise MissingDependencyError("mcp", "mcp") from exc
    return SDK(FastMCP, Context, ToolError, 1)


def jsonrpc_message(body: dict[str, Any]) -> Any:
    """`body` as the installed SDK's JSON-RPC message: a pydantic root model in mcp 1, one of
    the message classes (read through a type adapter) in mcp 2."""
    from mcp import types

    adapter = getattr(types, "jsonrpc_message_adapter", None)
    if adapter is not None:
        return adapter.validate_python(body)
    return types.JSONRPCMessage.model_validate(body)
