"""A small MCP server over stdio for the crash and start-failure tests, written
with the official SDK: `crash` exits the process mid-call, `pid` says which
process answered. `--fail-start` writes to stderr and exits before speaking MCP;
`--hang` writes to stderr and never answers."""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("crashy")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def pid() -> str:
    """The id of the process that answers."""
    return str(os.getpid())


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def getenv(name: str) -> str:
    """The value of an environment variable of the server's process."""
    return os.environ.get(name, "(unset)")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def crash() -> str:
    """Exit the server process in the middle of this call."""
    print("crashy: exiting mid-call on purpose", file=sys.stderr, flush=True)
    os._exit(3)


if __name__ == "__main__":
    if "--fail-start" in sys.argv:
        print("crashy: cannot open its database /nonexistent/db.sqlite", file=sys.stderr, flush=True)
        sys.exit(2)
    if "--hang" in sys.argv:
        print("crashy: waiting for a licence server that never answers", file=sys.stderr, flush=True)
        time.sleep(3600)
    server.run("stdio")
