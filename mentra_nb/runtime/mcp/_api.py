"""The MCP API as free functions taking the runtime (or any of its agents), in
the style of `teams` and `subagents`. `Runtime.add_mcp_server` and
`Runtime.remove_mcp_server` are one-line calls of these.

    mcp.add_server(rt, MCPServer.stdio("time", ["python", "-m", "mcp_server_time"]))
    mcp.servers(rt)                      # [ServerInfo(name='time', state='stopped', ...)]
    await mcp.list_tools(rt, "time")     # starts it; the tools as the model sees them
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from mentra_nb.runtime._services import HasServices
from mentra_nb.runtime.mcp._connection import ConnectionState
from mentra_nb.runtime.mcp._extension import add_server, extension_of, remove_server
from mentra_nb.runtime.mcp._names import model_tool_name
from mentra_nb.runtime.mcp._tools import MCPTool

__all__ = ["MCPToolInfo", "ServerInfo", "add_server", "list_tools", "remove_server", "servers"]


class ServerInfo(BaseModel):
    """A configured server as `%mentra mcp list` shows it."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str
    transport: Literal["stdio", "http", "in_process"]
    target: str  # the command line or the URL
    state: ConnectionState
    tool_count: int | None  # None until the server first started
    error: str | None = None
    persisted: bool = True
    start_timeout: float = 30.0
    # Came from the state file and not yet allowed: its first start asks the user.
    needs_approval: bool = False


class MCPToolInfo(BaseModel):
    """One tool of a server: the name the model sees, the server's name for it."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str
    server_tool: str
    description: str
    read_only: bool
    requires_approval: bool


def servers(runtime: HasServices) -> list[ServerInfo]:
    """The configured servers with their state (no server is started)."""
    services, extension = extension_of(runtime)
    infos = []
    for server in extension.servers(services):
        connection = extension.live_connection(server.name)
        tools = connection.tools if connection is not None else None
        infos.append(ServerInfo(
            name=server.name, transport=server.transport, target=server.describe(),
            state=connection.state if connection is not None else "stopped",
            tool_count=None if tools is None else len(tools),
            error=connection.error if connection is not None else None,
            persisted=server.persistable, start_timeout=server.start_timeout,
            needs_approval=not extension.trusted(server),
        ))
    return infos


async def list_tools(runtime: HasServices, name: str) -> list[MCPToolInfo]:
    """Start server `name` if needed and list its tools as an agent would see them."""
    services, extension = extension_of(runtime)
    connection = extension.connection(services, name)
    taken: set[str] = set()
    infos = []
    for remote in await connection.ensure_ready():
        model_name = model_tool_name(name, remote.name, taken)
        taken.add(model_name)
        spec = MCPTool(connection, remote, model_name).spec
        infos.append(MCPToolInfo(name=spec.name, server_tool=remote.name, description=spec.description,
                                 read_only=spec.read_only, requires_approval=spec.requires_approval))
    return infos
