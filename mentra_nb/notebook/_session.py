"""`NotebookSession`: one per kernel. It owns the runtime host, finds the state
file, opens the Runtime on first use and keeps one view per agent.

Everything that touches the Runtime runs on the host's loop thread; the
methods here are called from cells (the shell thread) and wait only for quick
store work, never for an agent's turn.
"""

from __future__ import annotations

import asyncio
import difflib
import os
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from mentra_nb._notebook_path import use_namespace
from mentra_nb.errors import (
    AgentBusy,
    AgentExists,
    AgentNotFound,
    AwaitingApproval,
    ConfigError,
    MCPServerError,
    MentraError,
    StoreError,
)
from mentra_nb.messages import ContentBlock
from mentra_nb.notebook._cell_bridge import CellBridge
from mentra_nb.notebook._cell_history import CellHistory
from mentra_nb.notebook._discovery import (
    EXPLICIT_SOURCE,
    StoreLocation,
    discover_store,
    migrate_store,
)
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook._kernel_tools import KERNEL_TOOL_NAMES, kernel_tools, python_tool
from mentra_nb.notebook._notebook_identity import adopt_command, stored_nearby
from mentra_nb.notebook._waiting import pump_comms_until, wait_for
from mentra_nb.notebook.agent_view import AgentView, TurnScope
from mentra_nb.notebook.batch_view import BatchView
from mentra_nb.notebook.turn import Turn
from mentra_nb.providers.test import TestProvider
from mentra_nb.runtime import (
    FILE_TOOL_NAMES,
    Agent,
    AgentConfig,
    BatchJob,
    MCPServer,
    Runtime,
    Tool,
    mcp,
    shell_tool,
)
from mentra_nb.runtime.cell_tools import (
    CellsUndone,
    cell_changes_after,
    cells_enabled,
    last_prompt,
    rewind_with_cells,
)
from mentra_nb.store import AgentRecord, open_store
from mentra_nb.store.sqlite import stored_agent_names

if TYPE_CHECKING:
    from mentra_nb.notebook.subagent_picker import SubagentPickerView
    from mentra_nb.notebook.team_view import TeamView

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
# The settings `%mentra spawn` sets, compared when a rerun attaches to a stored agent.
SPAWN_SETTINGS = ("system", "tools", "subagents", "team", "read_only", "auto_approve", "mcp_servers", "cells")
# How long `%mentra spawn` waits, once per kernel, for the page to say whether it can
# edit cells (it answers in milliseconds; where no page answers, this is the cost).
PAGE_HELLO_SECONDS = 2.0
# An undo makes one request to the page per cell change (each answered in milliseconds,
# or given up after 30 s); this bounds the whole.
UNDO_SECONDS = 300.0


def _setting(value: object) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value)) or "none"
    if value is None:
        return "unset"
    if hasattr(value, "model_dump"):
        return "on"
    return repr(value) if isinstance(value, str) else str(value).lower()


def _definition(tool: object) -> str:
    """Where a tool comes from, as `module.qualname` of its function (or class): a
    cell that runs again defines a function of the same name."""
    source = getattr(tool, "func", None) or type(tool)
    return f"{getattr(source, '__module__', '?')}.{getattr(source, '__qualname__', '?')}"


class NotebookSession:
    """`python_tool` / `shell_tool` register those opt-in tools for this kernel's
    agents from the start (`%mentra spawn NAME --python --shell` does it later)."""

    def __init__(self, user_ns: MutableMapping[str, Any], *, environ: Mapping[str, str] = os.environ,
                 python_tool: bool = False, shell_tool: bool = False, cells: CellHistory | None = None) -> None:
        self.user_ns = user_ns
        self.cells = cells  # the kernel's cell history, for the notebook tools
        self.last_agent: str | None = None  # the agent a cell sent work to last (%mentra explain's default)
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
        self._user_tools: set[str] = set()  # names registered with `register_tool`
        self._bridge: CellBridge | None = None  # the notebook bridge, made with the runtime

    # --- the runtime --------------------------------------------------------------

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            location = self.location
            workspace = self.workspace
            self._prepare_folder(location)
            # Opened from this (the cell's) thread: the page answers over its comm.
            bridge = self.cell_bridge

            def open_runtime() -> Runtime:
                return Runtime(
                    store=open_store(location.url or location.path),
                    runtime_id=location.runtime_id,
                    # Streams a little slower than instant, so the offline model is watchable.
                    providers=[TestProvider(chunk_delay=0.01)],
                    tools=[*kernel_tools(self.user_ns, self.cells, lambda: self.location.notebook),
                           *(self._opt_in_tool(n) for n in sorted(self._opt_in))],
                    owner_label=_kernel_label(),
                    workspace=workspace,
                    notebook=bridge,
                )

            self._runtime = self.host.call(open_runtime)
        return self._runtime

    @property
    def cell_bridge(self) -> CellBridge:
        """The notebook bridge: the agents' way to the notebook's cells (_cell_bridge.py)."""
        if self._bridge is None:
            self._bridge = CellBridge()
        return self._bridge

    def cells_available(self, timeout: float = PAGE_HELLO_SECONDS) -> bool:
        """Whether the notebook's page can edit cells (JupyterLab 4, Notebook 7): waits
        up to `timeout` seconds, once per kernel, for the page's first word."""
        return self.cell_bridge.wait_for_page(timeout)

    def cells_notice(self, agent: Agent) -> str | None:
        """The one line `%mentra spawn` prints when `agent` is to work in cells and
        cannot here (None: it can, or it is not to)."""
        if not cells_enabled(agent) or self.cells_available():
            return None
        return (f"'{agent.name}' gets no cell tools here ({self.cell_bridge.unavailable()}); "
                "everything else works")

    @staticmethod
    def _prepare_folder(location: StoreLocation) -> None:
        """Make the state folder, move an earlier version's state file into it, and
        say where state goes when the kernel cannot tell which notebook it runs."""
        try:
            moved = migrate_store(location)
        except OSError as err:
            raise StoreError(f"cannot prepare {location.path}: {err}; %mentra db PATH picks another "
                             "state file") from err
        if moved is not None:
            print(f"mentra: moved this notebook's state from {moved.name} to {location.path}")
        # In a kernel only: a terminal IPython has no notebook to find.
        if (location.notebook is None and location.source != EXPLICIT_SOURCE and location.url is None
                and _kernel_label() is not None):
            print(f"mentra: this kernel does not know its notebook's path, so agents are kept in "
                  f"{location.path} (runtime id '{location.runtime_id}'); to give this notebook a file "
                  "of its own, add %mentra db NAME.sqlite to its first cell, or name the notebook to "
                  "the kernel: JPY_SESSION_NAME=PATH in its environment (nbclient: "
                  "client.execute(env=...)), or papermill's --inject-input-path (in Python: "
                  "parameters={'PAPERMILL_INPUT_PATH': PATH})")

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
        try:
            self.check_credentials(default_model)
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

    def use_store(self, path: str, *, runtime_id: str | None = None) -> StoreLocation:
        """Move to another state file (and, with `runtime_id`, to the agents stored under
        that id there): the current runtime closes (its leases are released)."""
        location = discover_store(self.user_ns, explicit=path, environ=self.environ)
        if runtime_id is not None:
            if location.url is None and runtime_id not in stored_agent_names(location.path):
                held = ", ".join(repr(r) for r in stored_agent_names(location.path)) or "none"
                raise ConfigError(f"{location.path} holds no agents of runtime id '{runtime_id}' "
                                  f"(runtime ids there: {held}); %mentra resume lists the state files "
                                  "nearby and what they hold")
            location = location.model_copy(update={"runtime_id": runtime_id,
                                                   "source": "adopted with %mentra adopt"})
        if self._runtime is not None:
            self.host.submit(self._runtime.aclose()).result(30)
            self._runtime = None
            self._views.clear()
            self._pickers.clear()
            self._teams.clear()
            self._user_tools.clear()  # the new runtime has none of them
        self.location = location
        _ = self.runtime  # open now, so a bad path fails here and not on the next spawn
        return location

    def close(self) -> None:
        if self._runtime is not None:
            self.host.submit(self._runtime.aclose()).result(30)
            self._runtime = None
        if self._bridge is not None:
            self._bridge.close()
            self._bridge = None
        self.host.stop()
        use_namespace(None)

    # --- MCP servers ----------------------------------------------------------------

    def add_mcp_server(self, server: MCPServer) -> bool:
        """Configure `server` for this notebook's agents; True if it replaced one
        that was set up differently."""
        runtime = self.runtime

        def add() -> bool:
            before = next((s for s in mcp.servers(runtime) if s.name == server.name), None)
            mcp.add_server(runtime, server)
            return before is not None and before.target != server.describe()

        return self.host.call(add)

    def remove_mcp_server(self, name: str) -> None:
        runtime = self.runtime
        self.host.call(lambda: mcp.remove_server(runtime, name))

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
        """Offer a `@tool` function to this kernel's agents (those whose config allows it).

        Rerun-safe: a tool this session registered before under the same name, from
        a function of the same name (the cell ran again, or the function was
        redefined), is replaced; a different tool claiming the name is an error."""
        runtime = self.runtime
        name = getattr(getattr(tool, "spec", None), "name", None)
        existing = next((t for t in runtime.tools if t.spec.name == name), None) if name else None
        if existing is not None and (name not in self._user_tools
                                     or _definition(existing) != _definition(tool)):
            where = (f"registered from {_definition(existing)}" if name in self._user_tools
                     else "a built-in tool" if name in self.builtin_tool_names()
                     else "registered on the runtime itself")
            raise ConfigError(
                f"a tool named '{name}' is already registered ({where}), and {_definition(tool)} "
                f"is another; rename it (@tool(name='...')) so both can be offered")
        self.host.call(lambda: runtime.register_tool(tool, replace=existing is not None))
        if name:
            self._user_tools.add(name)

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

    def spawn_or_attach(self, name: str, model: str, config: AgentConfig, *, model_given: bool,
                        replace: bool = False) -> tuple[Agent, str | None]:
        """The agent `name` as a spawn cell asks for it, and a note for the cell.

        A rerun of the cell (the same kernel, a restarted one, a scheduled run)
        attaches to the agent stored under that name when its model (if the cell
        names one) and its settings match; otherwise it says what differs and
        that `--replace` starts over. `replace` renames the stored agent (nothing
        is deleted) and spawns a new one, whatever its settings."""
        runtime = self.runtime
        live = next((a for a in runtime.agents if a.name == name and a.kind != "teammate"), None)
        record = None if live is not None else next(
            (r for r in self.records() if r.name == name and r.kind == "agent"), None)
        stored_id = live.id if live is not None else record.id if record is not None else None
        if stored_id is None:
            return self.spawn(name, model, config), None
        agent_id: str = stored_id
        if replace:
            retired, closed = self._retire(name, agent_id)
            agent = self.spawn(name, model, config)
            team = (f"; {', '.join(closed)}, working for it, stopped with it and stay stored under it "
                    f"(resuming it revives its team)") if closed else ""
            return agent, f"the earlier '{name}' is kept as '{retired}' (%mentra resume {retired}){team}"
        existing = live if live is not None else self.host.call(lambda: runtime.resume_agent(agent_id))
        differences = self._differences(existing, model if model_given else None, config)
        if differences:
            raise AgentExists(
                f"'{name}' is stored with other settings ({'; '.join(differences)}). Rerunning a spawn "
                f"cell attaches to the stored agent only when they match: change the cell back, or start "
                f"over with %mentra spawn {name} ... --replace (the stored one is kept, renamed)")
        if live is not None:
            return existing, None
        return existing, (f"'{name}' was stored: attached to it ({existing.snapshot.history_len} "
                          f"messages, {existing.status}); --replace would start over")

    def _retire(self, name: str, agent_id: str) -> tuple[str, list[str]]:
        """Rename stored agent `name` out of the way (nothing is deleted): its new
        name, and the names of its live teammates and subagents closed with it."""
        # Retired without being resumed: its stored teammates are not woken to be left behind.
        runtime = self.runtime
        taken = {r.name for r in self.records()}
        retired = next(f"{name[:50]}.replaced-{n}" for n in range(1, 10_000)
                       if f"{name[:50]}.replaced-{n}" not in taken)

        async def retire() -> tuple[list[str], set[str]]:
            live = {a.id for a in runtime.agents}
            names = await runtime.retire_agent(agent_id, retired)
            return names, live - {a.id for a in runtime.agents}

        # Its teammates' and subagents' views go too: a view shows one Agent object,
        # and resuming the retired lead revives them as new ones.
        closed, gone = self.host.submit(retire()).result(60)
        self._close_views([agent_id, *gone])
        return retired, closed

    def _close_views(self, agent_ids: Iterable[str]) -> None:
        """Close every view of these agents (closed, deleted or retired): they stop updating."""
        for agent_id in agent_ids:
            for views in (self._views, self._pickers, self._teams):
                view = views.pop(agent_id, None)
                if view is not None:
                    view.close()

    def _differences(self, agent: Agent, model: str | None, config: AgentConfig) -> list[str]:
        """What a spawn cell asks for that `agent` was not created with: the model
        (when the cell names one) and the settings the magic sets."""
        differences = []
        if model is not None:
            runtime = self.runtime
            key = self.host.call(lambda: runtime.providers.resolve(model)[1].key)
            if key != agent.model.key:
                differences.append(f"model {agent.model.key}, not {key}")
        stored = agent.config
        for field in SPAWN_SETTINGS:
            old, new = getattr(stored, field), getattr(config, field)
            if old != new:
                differences.append(f"{field} {_setting(old)}, not {_setting(new)}")
        return differences

    def check_tools(self, names: list[str]) -> None:
        """Fail now, in the cell, on a tool name no agent here could be offered."""
        runtime = self.runtime
        known = [*self.host.call(runtime.tool_names), *OPT_IN_TOOLS]
        unknown = [n for n in names if n not in known and not n.startswith("mcp__")]
        if unknown:
            suggestion = difflib.get_close_matches(unknown[0], known, n=1)
            hint = f"; did you mean '{suggestion[0]}'?" if suggestion else ""
            raise ConfigError(
                f"unknown tool {', '.join(repr(n) for n in unknown)} in --tools{hint}. Known: "
                f"{', '.join(sorted(known))} (register your own with nb.session().register_tool(fn) "
                "before spawning; MCP tools come with --mcp SERVER)")

    def check_credentials(self, model: str) -> None:
        """Fail now, in the cell, when `model`'s provider has no key here."""
        runtime = self.runtime

        def check() -> None:
            provider, _ = runtime.providers.resolve(model)
            find_key = getattr(provider, "api_key", None)  # HTTP providers look keys up lazily
            if callable(find_key):
                find_key()

        self.host.call(check)

    def agent(self, name: str) -> Agent:
        runtime = self.runtime
        for agent in runtime.agents:
            if agent.name == name:
                return agent
        stored = [r for r in self.records() if r.name == name and r.kind == "agent"]
        hint = (f"it is stored; bring it back with %mentra resume {name}" if stored
                else "spawn it with %mentra spawn " + name)
        raise AgentNotFound(f"no live agent named '{name}' in this kernel; {hint}")

    def notebook_identity(self) -> dict[str, str]:
        """What the notebook's metadata keeps of where its agents are, written there by
        the front end when a view appears (_notebook_identity, js/saved_state.js)."""
        location = self.location
        return {"id": location.runtime_id, "state": "" if location.url else str(location.path)}

    def stored_elsewhere(self) -> str:
        """Where agents are kept near this notebook, other than its own, and the one
        command that makes them its own; "" when there are none."""
        location = self.location
        here = location.path.resolve()
        nearby = [s for s in stored_nearby(location.notebook, Path.cwd())
                  if (s.state_file.resolve(), s.runtime_id) != (here, location.runtime_id)]
        # This notebook's own state file first: its name's earlier owner is the likeliest.
        nearby.sort(key=lambda s: s.state_file.resolve() != here)
        if not nearby:
            return ""
        lines = ["agents stored nearby:"]
        for stored in nearby[:10]:
            carrier = f" (kept by {stored.notebook.name})" if stored.notebook is not None else ""
            names = ", ".join(stored.agents[:8]) + (f" and {len(stored.agents) - 8} more"
                                                     if len(stored.agents) > 8 else "")
            lines.append(f"  {stored.state_file}, runtime id '{stored.runtime_id}': {names}{carrier}")
        lines.append(f"to make them this notebook's (and bring them back): {adopt_command(nearby[0], Path.cwd())}")
        return "\n".join(lines)

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
            elsewhere = self.stored_elsewhere()
            raise AgentNotFound(f"no stored agent named '{name}' in {self.location.where} under runtime id "
                                f"'{self.location.runtime_id}' (stored: {known})"
                                + (f"\n{elsewhere}" if elsewhere else ""))
        return [self.host.call(lambda: runtime.resume_agent(record.id))]

    def start_turn(self, agent: Agent, text: str | list[ContentBlock], *,
                   output: type[BaseModel] | None = None) -> tuple[Turn, AgentView]:
        """Send `text` (or content blocks: a prompt with a figure) to `agent` as `send`
        does, with a view of this turn alone (made before the run starts, so it
        misses nothing of it)."""
        self._wait_until_idle(agent)
        snapshot = agent.snapshot
        view = AgentView(agent, self.host, notebook=self.notebook_identity(),
                         turn=TurnScope(first=snapshot.history_len, generation=snapshot.run_generation + 1))
        return self.send(agent, text, output=output), view

    def send(self, agent: Agent, text: str | list[ContentBlock], *,
             output: type[BaseModel] | None = None) -> Turn:
        """Start a run of `agent` on `text` (a typed one with `output`); returns at once
        (after the agent's run in progress, if any, has ended: see `_wait_until_idle`)."""
        self._wait_until_idle(agent)
        self.last_agent = agent.name
        generation = agent.snapshot.run_generation + 1
        return Turn(agent.name, generation, self.host.submit(agent.run(text, output=output)),
                    output_type=output,
                    waiting_calls=lambda: self.host.call(lambda: agent.snapshot.pending_approvals))

    def _wait_until_idle(self, agent: Agent) -> None:
        """A cell that sends to an agent still on a run waits for that run to end, then
        sends: cells run in order (Run All, a cell run while the last one's turn
        streams) as they do without agents. The views stay answerable meanwhile
        (`_waiting`); an interrupt ends the wait with nothing sent."""
        said = False
        while (running := self.host.call(lambda: agent.current_run)) is not None:
            generation = agent.snapshot.run_generation
            if self.host.in_loop_thread:  # (code on the runtime's own loop cannot block it)
                raise AgentBusy(f"agent '{agent.name}' is still working on run {generation}; "
                                "await agent.current_run first")
            if not said:
                print(f"mentra: '{agent.name}' is still on run {generation}; this cell sends when it "
                      f"ends (Stop in its view ends it now; an interrupt sends nothing)", flush=True)
                said = True
            try:
                wait_for(self.host.submit(asyncio.wait([running])), None,
                         asked=lambda: self._asked_of(agent))
            except KeyboardInterrupt:
                raise KeyboardInterrupt(f"the cell stopped waiting; nothing was sent to '{agent.name}', "
                                        f"which goes on with run {generation}") from None
            except AwaitingApproval as asked:
                raise AgentBusy(f"{asked}; nothing was sent: run this cell again once run "
                                f"{generation} has ended") from None

    def _asked_of(self, agent: Agent) -> str | None:
        """The approval `agent`'s run waits for, said for a cell; None: none."""
        calls = self.host.call(lambda: agent.snapshot.pending_approvals)
        if not calls:
            return None
        what = ", ".join(f"{c.tool_name} ({c.reference})" for c in calls)
        return (f"'{agent.name}' waits for your approval of {what} in its view (or %mentra approve "
                f"{agent.name} {calls[0].reference})")

    def stop(self, agent: Agent, *, now: bool = False) -> None:
        self.host.call(lambda: agent.stop(now=now))

    def fork(self, source: Agent, new: str, at: int | None, *,
             replace: bool = False) -> tuple[Agent, str | None]:
        """`source.fork(new, at)`, or the stored fork `new` of `source` at that point
        brought back (a re-run cell), and a note for the cell (None: made now).
        `replace` renames a stored `new` out of the way first (nothing is deleted)."""
        runtime = self.runtime
        existing = next((r for r in self.records() if r.name == new and r.kind == "agent"), None)
        if existing is not None and replace:
            retired, _closed = self._retire(new, existing.id)
            return (self.host.call(lambda: source.fork(new, at)),
                    f"the earlier '{new}' is kept as '{retired}'")
        if existing is not None and existing.forked_from == source.id and at in (None, existing.fork_index):
            live = next((a for a in runtime.agents if a.id == existing.id), None)
            agent = live or self.host.call(lambda: runtime.resume_agent(existing.id))
            return agent, "it was forked before: attached to it"
        if existing is not None:
            raise AgentExists(
                f"an agent named '{new}' already exists and is not a fork of '{source.name}'"
                + (f" at {at}" if at is not None else "") + f"; pick another name, start over with "
                f"%mentra fork {source.name} {new} ... --replace (the stored one is kept, renamed), "
                f"or delete it with %mentra rm {new}"
            )
        return self.host.call(lambda: source.fork(new, at)), None

    def undo(self, agent: Agent, to: int | None) -> tuple[int, CellsUndone]:
        """`rewind_with_cells`: `agent` goes back to its first `to` messages (None: to
        before its last prompt) and its cell changes after them are reverted through
        this notebook's page; returns `to` and what happened to the cells. The cell
        handles its comm messages meanwhile: the page answers over them."""
        self.cells_available()  # a page that has not spoken yet gets its chance first
        if to is None:
            to = self.host.call(lambda: last_prompt(agent))
        return to, pump_comms_until(self.host.submit(rewind_with_cells(agent, to)), UNDO_SECONDS)

    def cell_changes_after(self, agent: Agent, to: int) -> int:
        """How many of `agent`'s cell changes after message `to` no undo reverted yet."""
        return self.host.call(lambda: cell_changes_after(agent.services.store, agent.id, to))

    def delete(self, name: str, *, with_forks: bool) -> list[str]:
        """Delete stored agent `name` (and what `rt.delete_agent` takes with it);
        their views stop updating."""
        runtime = self.runtime
        deleted = self.host.submit(runtime.delete_agent(name, with_forks=with_forks)).result(60)
        self._close_views(deleted)
        return deleted

    def interrupt(self, agent: Agent) -> None:
        self.host.call(agent.cancel)

    def picker(self, agent: Agent) -> SubagentPickerView:
        """The one long-lived subagent picker of `agent`."""
        picker = self._pickers.get(agent.id)
        if picker is None:
            # Imported on first use, as the team view is: resuming imports neither.
            from mentra_nb.notebook.subagent_picker import SubagentPickerView

            picker = SubagentPickerView(agent, self.host)
            self._pickers[agent.id] = picker
        return picker

    def team_view(self, lead: Agent) -> TeamView:
        """The one long-lived team view of `lead`."""
        view = self._teams.get(lead.id)
        if view is None:
            from mentra_nb.notebook.team_view import TeamView

            view = TeamView(lead, self.host)
            self._teams[lead.id] = view
        return view

    def batch_view(self, job: BatchJob) -> BatchView:
        """A view of `job`'s progress (each `%mentra map` cell shows its own)."""
        return BatchView(job, self.host)

    def view(self, agent: Agent) -> AgentView:
        """The one long-lived view of `agent` (displaying it again shows the same widget)."""
        view = self._views.get(agent.id)
        if view is None:
            view = AgentView(agent, self.host, notebook=self.notebook_identity())
            self._views[agent.id] = view
        return view

