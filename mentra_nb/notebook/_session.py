"""`NotebookSession`: one per kernel. It owns the runtime host, finds the state
file, opens the Runtime on first use and keeps one view per agent.

Everything that touches the Runtime runs on the host's loop thread; the
methods here are called from cells (the shell thread) and wait only for quick
store work, never for an agent's turn.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any, TypeVar

from mentra_nb._notebook_path import use_namespace
from mentra_nb.errors import AgentBusy, AgentNotFound, ConfigError, MCPServerError, MentraError
from mentra_nb.notebook._discovery import StoreLocation, discover_store
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook._kernel_tools import KERNEL_TOOL_NAMES, kernel_tools, python_tool
from mentra_nb.notebook.agent_view import AgentView
from mentra_nb.notebook.subagent_picker import SubagentPickerView
from mentra_nb.notebook.team_view import TeamView
from mentra_nb.notebook.turn import Turn
from mentra_nb.providers.test import TestProvider
from mentra_nb.runtime import (
    FILE_TOOL_NAMES,
    Agent,
    AgentConfig,
    MCPServer,
    Runtime,
    Tool,
    mcp,
    shell_tool,
)
from mentra_nb.store import AgentRecord, open_store

__all__ = ["NotebookSession"]

T = TypeVar("T")


def _kernel_label() -> str | None:
    try:
        from ipykernel.connect import get_connection_file

        name = Path(get_connection_file()).stem  # kernel-<id>
        return f"kernel {name.removeprefix('kernel-')}"
    except Exception:  # not in a kernel (tests, plain IPython)
        return None


OPT_IN_TOOLS = ("python", "shell")
OFFLINE_MODEL = "test"


class NotebookSession:
    """`python_tool` / `shell_tool` register those opt-in tools for this kernel's
    agents from the start (`%mentra spawn NAME --python --shell` does it later)."""

    def __init__(self, user_ns: MutableMapping[str, Any], *, environ: Mapping[str, str] = os.environ,
                 python_tool: bool = False, shell_tool: bool = False) -> None:
        self.user_ns = user_ns
        self.environ = environ
        self.host = RuntimeHost()
        self.location: StoreLocation = discover_store(user_ns, environ=environ)
        # Providers find a .env (and the replay provider its cassette) beside the
        # notebook, which VS Code names only in the kernel's variables.
        use_namespace(user_ns)
        self._opt_in = {name for name, on in (("python", python_tool), ("shell", shell_tool)) if on}
        self._runtime: Runtime | None = None
        self._views: dict[str, AgentView] = {}
        self._pickers: dict[str, SubagentPickerView] = {}
        self._teams: dict[str, TeamView] = {}

    # --- the runtime --------------------------------------------------------------

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            location = self.location
            workspace = self.workspace

            def open_runtime() -> Runtime:
                return Runtime(
                    store=open_store(location.url or location.path),
                    runtime_id=location.runtime_id,
                    # Streams a little slower than instant, so the offline model is watchable.
                    providers=[TestProvider(chunk_delay=0.01)],
                    tools=[*kernel_tools(self.user_ns), *(self._opt_in_tool(n) for n in sorted(self._opt_in))],
                    owner_label=_kernel_label(),
                    workspace=workspace,
                )

            self._runtime = self.host.call(open_runtime)
        return self._runtime

    @property
    def workspace(self) -> Path:
        """The folder the file tools (and shell) work in: the notebook's own folder
        when the kernel knows its notebook, else the current folder."""
        notebook = self.location.notebook
        return notebook.parent if notebook is not None else Path.cwd()

    # --- tools --------------------------------------------------------------------

    def builtin_tool_names(self) -> list[str]:
        """Tools this session registered itself (file, kernel and opt-in tools),
        as opposed to ones a user registered on the runtime."""
        ours = {*FILE_TOOL_NAMES, *KERNEL_TOOL_NAMES, *OPT_IN_TOOLS}
        return [t.spec.name for t in self.runtime.tools if t.spec.name in ours]

    def enable_tool(self, name: str) -> bool:
        """Register the opt-in tool `name` ("python" or "shell") for this kernel's
        agents; every call needs approval. Returns False if it already was."""
        if name not in OPT_IN_TOOLS:
            raise ConfigError(f"unknown opt-in tool {name!r}; the opt-in tools are: {', '.join(OPT_IN_TOOLS)}")
        runtime = self.runtime
        if any(t.spec.name == name for t in runtime.tools):
            self._opt_in.add(name)
            return False
        tool = self._opt_in_tool(name)
        self.host.call(lambda: runtime.register_tool(tool))
        self._opt_in.add(name)
        return True

    def _opt_in_tool(self, name: str) -> Tool:
        if name == "python":
            return python_tool(self.user_ns)
        return shell_tool(self.workspace)

    # --- which model, which tools ---------------------------------------------------

    def spawn_model(self, agent: str, model: str | None, default_model: str) -> tuple[str, str | None]:
        """The model a new agent gets: `model`, else `default_model` when its key is
        there, else the offline test model; with a note saying why it fell back."""
        if model:
            return model, None
        if not default_model:
            return OFFLINE_MODEL, (
                f"no model configured, so '{agent}' uses the offline test model "
                "(pass --model provider:model or set %config MentraMagics.default_model)"
            )
        # The configured default may need a key this machine lacks: say so and stay offline.
        runtime = self.runtime

        def check_credentials() -> None:
            provider, _ = runtime.providers.resolve(default_model)
            find_key = getattr(provider, "api_key", None)  # HTTP providers look keys up lazily
            if callable(find_key):
                find_key()

        try:
            self.host.call(check_credentials)
        except MentraError as err:
            return OFFLINE_MODEL, f"{err}\nmentra: so '{agent}' uses the offline test model"
        return default_model, None

    def tools_hidden_from(self, model: str, enabled: list[str]) -> list[str]:
        """The tools to hide from an agent on `model` that did not name its tools.

        The offline test model calls every tool it is offered, once, on each
        message: offered write_file it would stop every turn for an approval of a
        made-up file. It gets this session's built-in tools only when asked for by
        name (`enabled`, or an explicit tool list)."""
        runtime = self.runtime
        try:
            provider, _ = self.host.call(lambda: runtime.providers.resolve(model))
        except MentraError:
            return []  # spawn reports the bad model itself
        if not isinstance(provider, TestProvider):
            return []
        return [n for n in self.builtin_tool_names() if n not in enabled]

    def approve(self, agent: Agent, call_id: str, *, always: bool = False) -> None:
        self.host.call(lambda: agent.approve(call_id, always=always))

    def deny(self, agent: Agent, call_id: str, reason: str = "") -> None:
        self.host.call(lambda: agent.deny(call_id, reason))

    @property
    def is_open(self) -> bool:
        """Whether this session has opened its runtime (and the state file) yet; the
        tutorials check it to ask for a fresh kernel."""
        return self._runtime is not None

    def use_store(self, path: str) -> StoreLocation:
        """Move to another state file: the current runtime closes (its leases are released)."""
        location = discover_store(self.user_ns, explicit=path, environ=self.environ)
        if self._runtime is not None:
            self.host.submit(self._runtime.aclose()).result(30)
            self._runtime = None
            self._views.clear()
            self._pickers.clear()
            self._teams.clear()
        self.location = location
        _ = self.runtime  # open now, so a bad path fails here and not on the next spawn
        return location

    def close(self) -> None:
        if self._runtime is not None:
            self.host.submit(self._runtime.aclose()).result(30)
            self._runtime = None
        self.host.stop()
        use_namespace(None)

    # --- MCP servers ----------------------------------------------------------------

    def add_mcp_server(self, server: MCPServer) -> bool:
        """Configure `server` for this notebook's agents; True if it replaced one."""
        runtime = self.runtime

        def add() -> bool:
            replaced = any(s.name == server.name for s in mcp.servers(runtime))
            runtime.add_mcp_server(server)
            return replaced

        return self.host.call(add)

    def remove_mcp_server(self, name: str) -> None:
        runtime = self.runtime
        self.host.call(lambda: runtime.remove_mcp_server(name))

    def mcp_servers(self) -> list[mcp.ServerInfo]:
        runtime = self.runtime
        return self.host.call(lambda: mcp.servers(runtime))

    def mcp_tools(self, name: str) -> list[mcp.MCPToolInfo]:
        """Start server `name` if needed (on the runtime's loop) and list its tools."""
        runtime = self.runtime
        timeout = next((s.start_timeout for s in self.mcp_servers() if s.name == name), 30.0)
        return self.host.submit(mcp.list_tools(runtime, name)).result(timeout + 30)

    def check_mcp_servers(self, names: list[str]) -> None:
        """Fail now, in the cell, if an agent is to use servers this notebook lacks."""
        known = {s.name for s in self.mcp_servers()}
        missing = [n for n in names if n not in known]
        if missing:
            raise MCPServerError(
                f"no MCP server named {', '.join(repr(n) for n in missing)} in this notebook "
                f"(configured: {', '.join(sorted(known)) or 'none'}); add it first with "
                f"%mentra mcp add {missing[0]} -- COMMAND [ARGS...]")

    # --- agents -------------------------------------------------------------------

    def register_tool(self, tool: Tool) -> None:
        """Offer a `@tool` function to this kernel's agents (those whose config allows it)."""
        runtime = self.runtime
        self.host.call(lambda: runtime.register_tool(tool))

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the runtime's thread and return its result: agent methods
        that are not thread-safe (team requests, say) are called this way from a cell."""
        return self.host.call(fn)

    def spawn(self, name: str, model: str, config: AgentConfig) -> Agent:
        runtime = self.runtime
        return self.host.call(lambda: runtime.spawn(name, model, config=config))

    def post(self, name: str, text: str) -> str | None:
        """Leave `text` as mail for lead agent `name` when another kernel drives it;
        returns who drives it, or None (nobody: nothing was posted)."""
        runtime = self.runtime
        stored = next((r for r in self.records() if r.name == name and r.kind == "agent"), None)
        if stored is None:
            return None
        holder = self.host.call(lambda: runtime.store.lease_holder(stored.id))
        if holder is None:
            return None
        self.host.call(lambda: runtime.post(stored.id, text))
        label = f" ({holder.label})" if holder.label else ""
        return f"pid {holder.pid} on {holder.host}{label}"

    def agent(self, name: str) -> Agent:
        runtime = self.runtime
        for agent in runtime.agents:
            if agent.name == name:
                return agent
        stored = [r for r in self.records() if r.name == name and r.kind == "agent"]
        hint = (f"it is stored; bring it back with %mentra resume {name}" if stored
                else "spawn it with %mentra spawn " + name)
        raise AgentNotFound(f"no live agent named '{name}' in this kernel; {hint}")

    def records(self) -> list[AgentRecord]:
        runtime = self.runtime
        return self.host.call(lambda: runtime.list_persisted_agents())

    def resume(self, name: str | None = None) -> list[Agent]:
        runtime = self.runtime
        if name is None:
            return self.host.call(runtime.resume)
        record = next((r for r in self.records() if r.name == name and r.kind == "agent"), None)
        if record is None:
            known = ", ".join(r.name for r in self.records() if r.kind == "agent") or "none"
            raise AgentNotFound(f"no stored agent named '{name}' in {self.location.where} "
                                f"(stored: {known})")
        return [self.host.call(lambda: runtime.resume_agent(record.id))]

    def send(self, agent: Agent, text: str) -> Turn:
        if agent.is_running:
            # Say so now, in the cell, rather than through a Turn that fails later.
            raise AgentBusy(
                f"agent '{agent.name}' is still working on run {agent.snapshot.run_generation}; "
                f"wait for it (turn.result()), or %mentra stop {agent.name} / %mentra interrupt "
                f"{agent.name} first"
            )
        generation = agent.snapshot.run_generation + 1
        return Turn(agent.name, generation, self.host.submit(agent.send(text)))

    def stop(self, agent: Agent) -> None:
        self.host.call(agent.stop)

    def interrupt(self, agent: Agent) -> None:
        self.host.call(agent.cancel)

    def picker(self, agent: Agent) -> SubagentPickerView:
        """The one long-lived subagent picker of `agent`."""
        picker = self._pickers.get(agent.id)
        if picker is None:
            picker = SubagentPickerView(agent, self.host)
            self._pickers[agent.id] = picker
        return picker

    def team_view(self, lead: Agent) -> TeamView:
        """The one long-lived team view of `lead`."""
        view = self._teams.get(lead.id)
        if view is None:
            view = TeamView(lead, self.host)
            self._teams[lead.id] = view
        return view

    def view(self, agent: Agent) -> AgentView:
        """The one long-lived view of `agent` (displaying it again shows the same widget)."""
        view = self._views.get(agent.id)
        if view is None:
            view = AgentView(agent, self.host)
            self._views[agent.id] = view
        return view

