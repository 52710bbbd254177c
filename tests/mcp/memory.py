"""An in-process MCP server written with the official SDK, for fast tests of
results, errors, timeouts, approvals, progress and list_changed."""

from __future__ import annotations

import base64

import anyio
from mcp.server.mcpserver import Context, Image
from mcp.server.mcpserver import MCPServer as SdkServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

__all__ = ["PNG", "memory_server"]

READ_ONLY = ToolAnnotations(read_only_hint=True)
# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")


def memory_server() -> SdkServer:
    server = SdkServer("memory")

    @server.tool(annotations=READ_ONLY)
    def lookup(key: str) -> str:
        """Look a key up in the memory store."""
        return f"value of {key}"

    @server.tool()
    def write(key: str, value: str) -> str:
        """Write a value to the memory store."""
        return f"wrote {key}={value}"

    @server.tool(annotations=READ_ONLY)
    def fail() -> str:
        """A tool that always fails."""
        raise ToolError("the memory store is locked")  # ToolError: the SDK sends its message

    @server.tool(annotations=READ_ONLY)
    async def slow() -> str:
        """Takes a minute."""
        await anyio.sleep(60)
        return "finally"

    @server.tool(annotations=READ_ONLY)
    def picture() -> Image:
        """A picture."""
        return Image(data=PNG, format="png")

    @server.tool(annotations=READ_ONLY)
    def weather(city: str) -> dict[str, object]:
        """Structured weather for a city."""
        return {"city": city, "temperature": 21, "conditions": "sunny"}

    @server.tool(annotations=READ_ONLY)
    def big() -> str:
        """A very long result."""
        return "start " + "x" * 100_000 + " end"

    @server.tool(annotations=READ_ONLY)
    async def steps(ctx: Context) -> str:
        """Works in three steps, reporting progress."""
        for step in range(1, 4):
            await ctx.report_progress(step, 3, f"step {step}")
        return "all steps done"

    @server.tool(annotations=READ_ONLY)
    async def grow(ctx: Context) -> str:
        """Adds a tool named 'added' and tells the client its tool list changed."""

        def added() -> str:
            """A tool that did not exist at first."""
            return "I am new"

        server.add_tool(added, annotations=READ_ONLY)
        await ctx.session.send_tool_list_changed()
        return "grown"

    return server
