"""How MCP plugs into a `Runtime`: `MCPExtension`.

One of a runtime's default extensions. It keeps the runtime's MCP servers
(persisted as the runtime's `mcp.servers` record, read back the first
time they are needed, so a resumed runtime has them again) and one shared
connection per server. An agent whose `AgentConfig.mcp_servers` names servers
gets an `MCPAgentExtension`: before each model call it starts those servers if
they are not running (first use, or after a crash) and lists their tools again
if a server said its list changed; `tools()` then offers them.

A state file can come from anyone, and a stored server is a command that runs
with your rights. So a server read from the store starts only after the user
allowed it: before its first start an agent that uses it asks, showing the
command (or URL), as it asks before a tool call; a denial fails the run. A
server added in this process (`add`, `Runtime(mcp_servers=...)`, `%mentra mcp
add`), with this exact configuration, is the user's own and starts at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, Field, ValidationError

from mentra_nb.errors import ConfigError, MCPServerError
from mentra_nb.messages import Message
from mentra_nb.runtime._extensions import AgentExtension, RuntimeExtension
from mentra_nb.runtime._services import AgentHandle, HasServices, Services
from mentra_nb.runtime.mcp._config import MCPConfig, MCPServer
from mentra_nb.runtime.mcp._connection import ServerConnection, require_sdk
from mentra_nb.runtime.mcp._names import PREFIX, model_tool_name
from mentra_nb.runtime.mcp._tools import MCPTool
from mentra_nb.runtime.tools import Tool
from mentra_nb.store.records import RecordKind

__all__ = [
    "SERVERS", "MCPAgentExtension", "MCPExtension", "StoredServers", "add_server", "extension_of",
    "remove_server",
]

log = logging.getLogger("mentra_nb.runtime.mcp")



class StoredServers(BaseModel):
    """A runtime's persistable servers, as stored: each entry is validated on its
    own when read, so one damaged entry does not cost the others."""

    servers: list[Any] = Field(default_factory=list)


# One record per runtime id (its scope). No lease fences it: it belongs to the
# notebook, whichever kernel writes.
SERVERS = RecordKind("mcp.servers", StoredServers)
"""The record kind of a runtime's configured MCP servers: one record per runtime id."""


def extension_of(runtime: HasServices) -> tuple[Services, MCPExtension]:
    """The services and MCP extension of `runtime` (or of any of its agents)."""
    services = runtime.services
    extension = services.extension(MCPExtension)
    if extension is None:
        raise ConfigError("this runtime was built without MCPExtension; pass "
                          "extensions=[*default_extensions()] (which includes it) or add MCPExtension()")
    return services, extension


def add_server(runtime: HasServices, server: MCPServer) -> None:
    """Configure `server` for the runtime's agents (replacing one of the same name).
    Its configuration (never a secret) is persisted under the runtime id, so a
    resumed runtime has it again; it starts on first use."""
    services, extension = extension_of(runtime)
    extension.add(services, server)


def remove_server(runtime: HasServices, name: str) -> None:
    """Forget server `name` and stop it. Agents that named it fail their next run
    with an error saying so, until it is added again."""
    services, extension = extension_of(runtime)
    extension.remove(services, name)


def _add_servers(runtime: HasServices, servers: Iterable[MCPServer]) -> None:
    for server in servers:
        add_server(runtime, server)


class MCPExtension(RuntimeExtension):
    """The runtime-wide half: the configured servers and their connections.

    It adds `AgentConfig(mcp_servers=[...])`, `Runtime(mcp_servers=[...])`,
    `rt.add_mcp_server(server)` and `rt.remove_mcp_server(name)`, and reserves the
    tool names starting with `mcp__` for the servers' tools."""

    config = MCPConfig
    runtime_api: ClassVar[dict[str, Any]] = {"add_mcp_server": add_server, "remove_mcp_server": remove_server}
    runtime_options: ClassVar[dict[str, Any]] = {"mcp_servers": _add_servers}

    def __init__(self, *, environ: Mapping[str, str] = os.environ) -> None:
        self._environ = environ
        self._servers: dict[str, MCPServer] = {}
        # Configurations this process added or the user allowed: they may start.
        self._trusted: dict[str, MCPServer] = {}
        self._connections: dict[str, ServerConnection] = {}
        self._loaded = False
        self._closing: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"<MCPExtension {sorted(self._servers)}>"

    # --- configuration ----------------------------------------------------------------

    def servers(self, services: Services) -> list[MCPServer]:
        """The configured servers, in the order they were added."""
        self._load(services)
        return list(self._servers.values())

    def server(self, services: Services, name: str) -> MCPServer:
        self._load(services)
        found = self._servers.get(name)
        if found is None:
            known = ", ".join(self._servers) or "none"
            raise MCPServerError(
                f"no MCP server named '{name}' in runtime '{services.runtime_id}' (configured: "
                f"{known}); add it with rt.add_mcp_server(MCPServer.stdio('{name}', [...])) or "
                f"%mentra mcp add {name} -- COMMAND"
            )
        return found

    def add(self, services: Services, server: MCPServer) -> None:
        """Configure `server` (persisted unless it lives in this process); a server of
        the same name is replaced, and its connection stopped if its configuration changed."""
        if not isinstance(server, MCPServer):
            raise ConfigError(f"{server!r} is not an MCPServer; build one with MCPServer.stdio(...) "
                              "or MCPServer.http(...)")
        require_sdk()
        self._reload(services)
        previous = self._servers.get(server.name)
        self._servers[server.name] = server
        try:
            self._persist(services)
        except Exception:
            if previous is None:
                del self._servers[server.name]
            else:
                self._servers[server.name] = previous
            raise
        self._trusted[server.name] = server
        if previous is not None and (previous != server or previous.sdk_server is not server.sdk_server):
            self._close_connection(server.name)
        elif (connection := self._connections.get(server.name)) is not None:
            connection.allow_start()  # the stored one, now added here as it is

    def remove(self, services: Services, name: str) -> None:
        """Forget server `name` (persisted) and stop it."""
        self._reload(services)
        self.server(services, name)  # a clear error for an unknown name
        removed = self._servers.pop(name)
        try:
            self._persist(services)
        except Exception:
            self._servers[name] = removed
            raise
        self._close_connection(name)

    def trusted(self, server: MCPServer) -> bool:
        """Whether `server` may start without asking: this process added it, or the
        user allowed this configuration."""
        return self._trusted.get(server.name) == server

    def allow(self, services: Services, name: str) -> None:
        """The user allowed server `name`, as configured now, to start."""
        server = self.server(services, name)
        self._trusted[name] = server
        connection = self._connections.get(name)
        if connection is not None and connection.config == server:
            connection.allow_start()

    def _load(self, services: Services) -> None:
        if self._loaded:
            return
        self._loaded = True
        found = SERVERS.get(services.store, services.runtime_id)
        for raw in found.value.servers if found is not None else []:
            try:
                server = MCPServer.model_validate(raw)
            except ValidationError as err:
                # One damaged entry must not cost the others (or the runtime). The
                # problems are logged without the values, which could hold a secret.
                problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}"
                                     for e in err.errors(include_url=False, include_input=False))
                log.warning("ignoring a stored MCP server of runtime %s: %s", services.runtime_id, problems)
                continue
            self._servers.setdefault(server.name, server)

    def _persist(self, services: Services) -> None:
        stored = [s.model_dump(mode="json") for s in self._servers.values() if s.persistable]
        if stored:
            SERVERS.put(services.store, services.runtime_id, StoredServers(servers=stored))
        else:
            SERVERS.delete(services.store, services.runtime_id)

    def _reload(self, services: Services) -> None:
        """Take in servers another kernel of this notebook stored since we last read,
        so our next write does not drop them (ours win on a name both have)."""
        self._loaded = False
        self._load(services)

    # --- connections ------------------------------------------------------------------

    def connection(self, services: Services, name: str) -> ServerConnection:
        """The shared connection to server `name` (created, not started, on first ask)."""
        connection = self._connections.get(name)
        if connection is None:
            server = self.server(services, name)
            connection = ServerConnection(server, self._environ, start_allowed=self.trusted(server))
            self._connections[name] = connection
        return connection

    def live_connection(self, name: str) -> ServerConnection | None:
        return self._connections.get(name)

    def _close_connection(self, name: str) -> None:
        connection = self._connections.pop(name, None)
        if connection is None:
            return
        # Called from sync code on the runtime's loop (a connection only exists
        # where a loop started it); the stop finishes in the background.
        task = asyncio.get_running_loop().create_task(connection.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    # --- RuntimeExtension -------------------------------------------------------------

    def refuse_tool_name(self, name: str) -> str | None:
        if not name.startswith(PREFIX):
            return None
        # The model would see it beside the MCP tool of that name, and the call would
        # go to only one of them: the prefix belongs to MCP servers' tools, whichever
        # was registered first (servers also come from the state file, lazily).
        return (f"a tool cannot be named '{name}': names starting with '{PREFIX}' are reserved "
                f"for MCP servers' tools ({PREFIX}<server>__<tool>); give yours another name")

    def attach(self, agent: AgentHandle) -> AgentExtension | None:
        if not MCPConfig.of(agent.config).mcp_servers:
            return None
        return MCPAgentExtension(self, agent)

    async def aclose(self) -> None:
        connections = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.aclose() for c in connections), *self._closing,
                             return_exceptions=True)


class MCPAgentExtension(AgentExtension):
    """Offers one agent the tools of the servers its config names."""

    own_tool_choice = True  # `mcp_servers` chose them; `AgentConfig.tools` narrows the runtime's own

    def __init__(self, extension: MCPExtension, agent: AgentHandle) -> None:
        self._extension = extension
        self._agent = agent
        self._tools: list[Tool] = []
        self._built_from: list[tuple[str, int]] = []  # (server, tools_version) last built

    def tools(self) -> list[Tool]:
        return list(self._tools)

    async def before_round(self) -> list[Message]:
        services = self._agent.services
        connections = [self._extension.connection(services, name)
                       for name in MCPConfig.of(self._agent.config).mcp_servers]
        for connection in connections:
            if not connection.start_allowed:
                await self._ask_to_start(connection)
            if connection.tools is None:
                # First use: a server that cannot start fails the run, with its stderr.
                await connection.ensure_ready()
            elif connection.state == "running" and connection.needs_refresh:
                # It said its tools changed. If listing them fails, the old list stays:
                # a call of a tool that is gone gets an error result from the server.
                try:
                    await connection.ensure_ready()
                except Exception as err:
                    log.info("could not list the tools of MCP server %s again: %s", connection.name, err)
            # A server that died (state "failed") keeps its last tools: the next call
            # of one starts it again, and the model gets an error result if it cannot.
        self._rebuild(connections)
        return []

    async def _ask_to_start(self, connection: ServerConnection) -> None:
        """A server from the state file: show the user what it runs and wait for a yes."""
        config = connection.config
        what = "url" if config.transport == "http" else "command"
        details: dict[str, Any] = {"server": config.name, what: config.describe(),
                   "why": "this MCP server came from the state file, not from this kernel: "
                          "allow it only if you trust that command"}
        if config.env:
            details["env"] = dict(config.env)  # variable names, never values
        if config.cwd:
            details["cwd"] = config.cwd
        decision = await self._agent.ask_approval(f"start MCP server '{config.name}'", details)
        if not decision.approved:
            why = decision.reason.strip() or "no reason given"
            raise MCPServerError(
                f"MCP server '{config.name}' ({config.describe()}) was not started: it came from "
                f"the state file and you did not allow it ({why}). Remove it (%mentra mcp remove "
                f"{config.name}), or send again and allow it")
        self._extension.allow(self._agent.services, config.name)

    def _rebuild(self, connections: list[ServerConnection]) -> None:
        built_from = [(c.name, c.tools_version) for c in connections]
        if built_from == self._built_from:
            return
        taken: set[str] = set()
        tools: list[Tool] = []
        for connection in connections:
            for remote in connection.tools or []:
                name = model_tool_name(connection.name, remote.name, taken)
                taken.add(name)
                tools.append(MCPTool(connection, remote, name))
        self._tools, self._built_from = tools, built_from
