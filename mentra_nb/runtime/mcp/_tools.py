"""An MCP server's tool as a `Tool` of the runtime.

The model sees `mcp__<server>__<tool>` with the server's description and input
schema. Approval follows the server's annotations: a tool marked
`readOnlyHint: true` runs without asking (and alongside other read-only calls
of its round); any other tool waits for the user, unless the agent
auto-approves it (`auto_approve=["mcp__time__*"]`). Failures of every kind come
back to the model as error results, never as exceptions in the turn loop.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from mentra_nb.errors import MCPServerError
from mentra_nb.runtime.mcp._connection import ServerConnection, ServerGone
from mentra_nb.runtime.mcp._results import tool_output
from mentra_nb.runtime.tools import (
    ToolContext,
    ToolDurability,
    ToolOutput,
    ToolSideEffectLevel,
    ToolSpec,
)

if TYPE_CHECKING:
    from mcp_types import Tool as RemoteTool

__all__ = ["MCPTool"]


class MCPTool:
    """One tool of one MCP server, called through the server's shared connection."""

    def __init__(self, connection: ServerConnection, remote: RemoteTool, name: str) -> None:
        self.connection = connection
        self.server = connection.name
        self.remote_name = remote.name
        annotations = remote.annotations
        read_only = bool(annotations is not None and annotations.read_only_hint)
        idempotent = bool(annotations is not None and annotations.idempotent_hint)
        schema = dict(remote.input_schema or {})
        schema.setdefault("type", "object")
        if schema.get("type") == "object":
            schema.setdefault("properties", {})  # OpenAI rejects an object schema without them
        description = (remote.description or remote.title or "").strip()
        self.spec = ToolSpec(
            name=name,
            description=description or f"Tool '{remote.name}' of MCP server '{self.server}'.",
            input_schema=schema,
            read_only=read_only,
            requires_approval=not read_only,
            side_effect_level=ToolSideEffectLevel.NONE if read_only else ToolSideEffectLevel.EXTERNAL,
            durability=(ToolDurability.REPLAY_SAFE if read_only or idempotent
                        else ToolDurability.NOT_REPLAYABLE),
            timeout=connection.config.call_timeout,
        )

    def __repr__(self) -> str:
        return f"<MCP tool {self.spec.name} ({self.remote_name} of {self.server})>"

    async def run(self, ctx: ToolContext, input: dict[str, Any]) -> str | ToolOutput:
        from mcp.shared.exceptions import MCPError

        async def report(progress: float, total: float | None, message: str | None) -> None:
            amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
            ctx.report_progress(f"{message} ({amount})" if message else amount)

        try:
            result = await self.connection.call(self.remote_name, input, report)
        except (ServerGone, MCPServerError) as err:
            return ToolOutput(content=str(err), is_error=True)
        except MCPError as err:
            return ToolOutput(content=f"MCP server '{self.server}' refused the call of "
                                      f"'{self.remote_name}': {self.connection.scrub(err.message)}",
                              is_error=True)
        # In a thread: bounding a result's images may decode and scale them.
        return await asyncio.to_thread(tool_output, result)
