"""MCP: agents use the tools of any Model Context Protocol server.

Configure servers on the runtime (`Runtime(mcp_servers=[...])`,
`rt.add_mcp_server(MCPServer.stdio(...))`), then give an agent
`AgentConfig(mcp_servers=["time"])`: it sees the server's tools as
`mcp__time__<tool>`. Servers start on first use, are shared by the runtime's
agents, restart after a crash and stop with `rt.aclose()`; their configuration
(never a secret) is persisted, so a resumed runtime has them again. Needs the
`mcp` extra (`pip install 'mentra-nb[mcp]'`).
"""

from mentra_nb.runtime.mcp._api import (
    MCPToolInfo,
    ServerInfo,
    add_server,
    list_tools,
    remove_server,
    servers,
)
from mentra_nb.runtime.mcp._config import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_START_TIMEOUT,
    SERVER_NAME_PATTERN,
    MCPConfig,
    MCPServer,
)
from mentra_nb.runtime.mcp._extension import SERVERS, MCPExtension, StoredServers
from mentra_nb.runtime.mcp._names import PREFIX as TOOL_NAME_PREFIX
from mentra_nb.runtime.mcp._names import model_tool_name

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "SERVERS",
    "SERVER_NAME_PATTERN",
    "TOOL_NAME_PREFIX",
    "MCPConfig",
    "MCPExtension",
    "MCPServer",
    "MCPToolInfo",
    "ServerInfo",
    "StoredServers",
    "add_server",
    "list_tools",
    "model_tool_name",
    "remove_server",
    "servers",
]
