"""`Runtime`: spawns, loads and recovers agents over one store.

    rt = Runtime(store=SqliteStore("analysis.mentra.sqlite"), runtime_id="analysis")
    writer = rt.spawn("writer", "anthropic:claude-sonnet-4-5")
    ...                                  # later, in a new process:
    [writer] = rt.resume("analysis")     # same agents, crash fix-ups applied

A runtime owns the leases of the agents it drives; `aclose()` (or garbage
collection, or interpreter exit) releases them for the next runtime.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mentra_nb.errors import AgentBusy, AgentError, AgentNotFound, ConfigError, MentraError
from mentra_nb.providers.base import ModelInfo, Provider
from mentra_nb.providers.registry import ProviderRegistry
from mentra_nb.providers.test import TestProvider
from mentra_nb.runtime._agent import Agent
from mentra_nb.runtime._closing import RuntimeParts, on_dropped, weak_method
from mentra_nb.runtime._config import AgentConfig
from mentra_nb.runtime._extensions import (
    RuntimeExtension,
    api_names,
    bind_api,
    default_extensions,
    runtime_option,
)
from mentra_nb.runtime._file_tools import Workspace, file_tools
from mentra_nb.runtime._leases import DEFAULT_LEASE_TTL, LeaseKeeper
from mentra_nb.runtime._mail_watch import MailWatcher
from mentra_nb.runtime._names import agent_name_problem
from mentra_nb.runtime._recovery import recover
from mentra_nb.runtime._services import AgentHandle, Services
from mentra_nb.runtime._time_travel import check_index, results_for_cut_calls
from mentra_nb.runtime.tools import Tool
from mentra_nb.store.base import AgentKind, AgentRecord, PersistedAgent, Store
from mentra_nb.store.sqlite import SqliteStore

__all__ = ["Runtime"]

log = logging.getLogger("mentra_nb.runtime")


def _weak_call(method: Callable[[], None]) -> Callable[[], None]:
    """`method`, called only while its object lives (a thread must not keep it alive)."""
    ref = weakref.WeakMethod(method)

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()

    return call


def _with_dependents(records: Sequence[AgentRecord], root: str, *, with_forks: bool) -> list[str]:
    """`root` and the agents that belong to it (those it started, at any depth),
    and, `with_forks`, its forks and theirs, in a stable order."""
    chosen = [root]
    seen = {root}
    for agent_id in chosen:  # grows while it is walked: a breadth-first search
        for record in records:
            owned = record.parent_id == agent_id or (with_forks and record.forked_from == agent_id)
            if owned and record.id not in seen:
                seen.add(record.id)
                chosen.append(record.id)
    return chosen


def _builtin_tools(workspace: Workspace) -> list[Tool]:
    """Tools every runtime registers unless built with `builtin_tools=False`:
    the file tools, confined to `workspace` (`write_file` and `edit_file` need
    the user's approval). `python` and `shell` are opt-in, never built in."""
    return file_tools(workspace)


class Runtime:
    """Drives agents persisted in `store` under `runtime_id`.

    `providers` are explicit provider instances (they win over built-ins of the
    same name); `tools` are registered for every agent, each agent's
    `AgentConfig` narrowing them. Without a store, state lives in memory only.
    `workspace` is the folder the built-in file tools may not leave (default:
    the current folder; pass a `Workspace(root, secret_files=...)` to change
    which files they refuse as secret). `extensions` are the runtime's
    extensions (default: `default_extensions()`, one of each registered).
    `tracer_provider` is an OpenTelemetry TracerProvider for the runs' spans
    (default: the global one when one is configured; none, no spans).
    `**options` are options the registered extensions add (`RuntimeExtension.
    runtime_options`), applied once the runtime is built; their methods are
    reachable on the runtime by name (`RuntimeExtension.runtime_api`).
    """

    def __init__(
        self,
        store: Store | None = None,
        providers: Iterable[Provider] = (),
        tools: Iterable[Tool] = (),
        runtime_id: str = "default",
        builtin_tools: bool = True,
        *,
        extensions: Iterable[RuntimeExtension] | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        owner_label: str | None = None,
        workspace: str | os.PathLike[str] | Workspace | None = None,
        tracer_provider: object | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(runtime_id, str) or not runtime_id.strip():
            raise ConfigError("runtime_id must be a non-empty string, e.g. the notebook's name")
        self.store: Store = store if store is not None else SqliteStore(":memory:")
        self.runtime_id = runtime_id
        self.providers = ProviderRegistry(providers)
        self.workspace = (workspace if isinstance(workspace, Workspace)
                          else Workspace(workspace if workspace is not None else Path.cwd()))
        self._extensions: list[RuntimeExtension] = (
            default_extensions() if extensions is None else list(extensions)
        )
        self._tools: dict[str, Tool] = {}
        builtin = _builtin_tools(self.workspace) if builtin_tools else []
        for t in [*builtin, *tools]:
            self.register_tool(t)
        self._builtin_tools = builtin
        self._agents: dict[str, Agent] = {}
        self._leases = LeaseKeeper(self.store, runtime_id, ttl=lease_ttl, label=owner_label)
        self._parts = RuntimeParts(runtime_id=runtime_id, agents=self._agents, extensions=self._extensions,
                                   leases=self._leases, providers=self.providers)
        # The handle agents and their tasks hold reaches this runtime weakly (see
        # _closing.py), so they never keep a runtime alive that the user dropped.
        gone = (f"runtime '{runtime_id}' was garbage collected, which closed it; keep a reference "
                "to the Runtime for as long as its agents work")
        self._services = Services(
            runtime_id=runtime_id, store=self.store, token=self._leases.token,
            providers=self.providers, create_agent=weak_method(self._create_agent, gone),
            load_agent=weak_method(self.resume_agent, gone), live_agent=self._agents.get,
            is_closed=self._parts.is_closed, prepare_run=weak_method(self._prepare_run, gone),
            extensions=self._extensions, workspace_root=self.workspace.root,
            tracer_provider=tracer_provider,
        )
        # Closed when the runtime is garbage collected or the interpreter exits, so
        # a dropped runtime never blocks the next one nor leaves its tasks pending.
        self._finalizer = weakref.finalize(self, on_dropped, self._parts)
        # The mail watcher holds the runtime weakly and stops when it is collected.
        self._mail = MailWatcher(self.store, _weak_call(self._mail_arrived))
        self._mail_finalizer = weakref.finalize(self, self._mail.close)
        for name, value in options.items():
            runtime_option(name)(self, value)

    @classmethod
    def empty(cls, **kwargs: object) -> Runtime:
        """A runtime with no built-in tools (only those passed in `tools`)."""
        return cls(builtin_tools=False, **kwargs)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"<Runtime {self.runtime_id!r} on {self.store!r}, {len(self._agents)} live agents>"

    if not TYPE_CHECKING:  # type checkers see only the runtime's own API; extensions' are typed functions
        def __getattr__(self, name: str) -> Any:
            """A method a registered extension adds (`RuntimeExtension.runtime_api`)."""
            if name.startswith("_"):
                raise AttributeError(f"'Runtime' object has no attribute '{name}'", name=name, obj=self)
            return bind_api("runtime", self, name)

    def __dir__(self) -> list[str]:  # tab completion offers the extensions' names too
        return sorted({*super().__dir__(), *api_names("runtime")})

    @property
    def services(self) -> Services:
        """The narrow handle the turn loop and extensions get of this runtime."""
        return self._services

    @property
    def extensions(self) -> tuple[RuntimeExtension, ...]:
        """The registered extensions, in order."""
        return tuple(self._extensions)

    # --- tools ----------------------------------------------------------------

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def register_tool(self, tool: Tool, *, replace: bool = False) -> None:
        """Offer `tool` to this runtime's agents; `replace` lets it take the place of a
        tool registered under the same name (agents call the new one from then on)."""
        spec = getattr(tool, "spec", None)
        if spec is None or not callable(getattr(tool, "run", None)):
            raise ConfigError(
                f"{tool!r} is not a tool: decorate a function with @tool, or give an object "
                "a `spec: ToolSpec` and an async `run(ctx, input)`"
            )
        if spec.name in self._tools and not replace:
            raise ConfigError(f"a tool named '{spec.name}' is already registered; rename one of them")
        for extension in self._extensions:
            refusal = extension.refuse_tool_name(spec.name)
            if refusal is not None:
                raise ConfigError(refusal)
        self._tools[spec.name] = tool

    def tool_names(self) -> list[str]:
        """Every tool name an agent's `AgentConfig.tools` may list: the registered
        tools and those the extensions may offer."""
        names = list(self._tools)
        for extension in self._extensions:
            names.extend(extension.tool_names())
        return list(dict.fromkeys(names))

    # --- agents ---------------------------------------------------------------

    @property
    def agents(self) -> list[Agent]:
        """Agents live in this runtime, in the order they were spawned or resumed."""
        return list(self._agents.values())

    def agent(self, name: str) -> Agent:
        """The live agent called `name`."""
        for agent in self._agents.values():
            if agent.name == name:
                return agent
        live = ", ".join(a.name for a in self._agents.values()) or "none"
        raise AgentNotFound(
            f"no live agent named '{name}' (live: {live}); spawn it, or resume it from the store"
        )

    def spawn(self, name: str, model: str | ModelInfo, config: AgentConfig | None = None) -> Agent:
        """Create and persist a new agent. `model` is `"provider:model"` or a `ModelInfo`.

        A name already stored in this runtime raises `AgentExists`; the store
        decides (a unique constraint), so two processes racing for one name
        cannot both win, and spawning takes as long with 10 agents as with 10,000.

        On the offline `test` model, which calls every tool it is offered, an
        agent whose config lists no `tools` is not offered the built-in file
        tools: it would stop every turn for an approval of a made-up write.
        Name them (`AgentConfig(tools=[...])`) to try them on it."""
        return self._create_agent(name, model, self._offline_model_config(model, config))

    def _offline_model_config(self, model: str | ModelInfo, config: AgentConfig | None) -> AgentConfig | None:
        """`config` with the built-in tools hidden, for an agent on the test model
        that did not name its tools (the notebook's `%mentra spawn` does the same)."""
        if config is not None and config.tools is not None:
            return config
        provider, _info = self.providers.resolve(model)
        # Only the runtime's own built-ins, and only while they are still registered
        # (a tool of the user's that replaced one by name is the user's).
        builtin = [t.spec.name for t in self._builtin_tools if self._tools.get(t.spec.name) is t]
        if not isinstance(provider, TestProvider) or not builtin:
            return config
        config = config or AgentConfig()
        hidden = [*config.hidden_tools, *(n for n in builtin if n not in config.hidden_tools)]
        return config.model_copy(update={"hidden_tools": hidden})

    def _create_agent(
        self, name: str, model: str | ModelInfo, config: AgentConfig | None = None, *,
        kind: AgentKind = "agent", parent_id: str | None = None, role: str | None = None,
    ) -> Agent:
        """Persist a new agent of any kind (extensions create the agents they start here)."""
        self._ensure_open()
        problem = agent_name_problem(name)
        if problem is not None:
            raise ConfigError(problem)
        _provider, info = self.providers.resolve(model)
        config = config or AgentConfig()
        now = time.time()
        record = AgentRecord(
            id=uuid.uuid4().hex,
            runtime_id=self.runtime_id,
            name=name,
            model=info.key,
            config=config.model_dump(mode="json"),
            kind=kind,
            parent_id=parent_id,
            role=role,
            created_at=now,
            updated_at=now,
        )
        self._leases.acquire(record.id)
        self._mail.start()
        try:
            self.store.create_agent(record, token=self._leases.token)
        except MentraError:
            self.store.release_leases(self._leases.token, [record.id])
            self._leases.held.discard(record.id)
            raise
        return self._adopt(PersistedAgent(record=record, transcript=[]))

    def fork_agent(self, source: Agent, new_name: str, at: int | None = None) -> Agent:
        """`source.fork(new_name, at)`: a new lead agent reading `source`'s first `at`
        committed messages (all when None), with its model and config. O(1) rows
        whatever the history's length; if the cut leaves tool calls without results,
        the fork gets error results for them (one message of its own)."""
        # The source's config is valid already: a copy of it spares validating it again
        # (a job over many rows forks once per row).
        stored = self.store.load_agent(source.id, transcript=False)
        if stored is None:
            raise AgentNotFound(f"agent '{source.name}' ({source.id}) is not in {self.store!r}")
        return self._fork(stored.record, source.config.model_copy(deep=True), new_name, at)

    def fork_stored(self, source_id: str, new_name: str, at: int | None = None) -> Agent:
        """Fork a stored agent this runtime does not drive (another process, on any
        host, may be driving it): as `fork_agent`, with the model and config read
        from the store. The source is only read, never leased or changed."""
        stored = self.store.load_agent(source_id, transcript=False)
        if stored is None:
            raise AgentNotFound(f"no agent with id {source_id} in {self.store!r} to fork")
        return self._fork(stored.record, AgentConfig.model_validate(stored.record.config), new_name, at)

    def _fork(self, source: AgentRecord, config: AgentConfig, new_name: str, at: int | None) -> Agent:
        """A fork of the stored agent `source` (as it is stored now) with `config`."""
        self._ensure_open()
        problem = agent_name_problem(new_name)
        if problem is not None:
            raise ConfigError(problem)
        committed = source.message_count  # a running agent: what it has committed
        at = committed if at is None else check_index(source.name, "fork(at=...)", at, committed)
        now = time.time()
        record = AgentRecord(
            id=uuid.uuid4().hex, runtime_id=self.runtime_id, name=new_name, model=source.model,
            config=config.model_dump(mode="json"), created_at=now, updated_at=now,
            message_count=at, forked_from=source.id, fork_index=at,
        )
        self._leases.acquire(record.id)
        try:
            self.store.fork_agent(record, source_id=source.id, at=at, token=self._leases.token)
        except MentraError:
            self.store.release_leases(self._leases.token, [record.id])
            self._leases.held.discard(record.id)
            raise
        fork = self._adopt(PersistedAgent(record=record, transcript=[]), config)
        repair = results_for_cut_calls(fork.last_message)
        if repair is not None:
            fork.state.append_messages([repair])
        return fork

    async def delete_agent(self, name_or_id: str, *, with_forks: bool = False) -> list[str]:
        """Delete a stored agent of this runtime (by name or id), with the agents it
        started (at any depth), its state and its mail; its forks too when `with_forks`.
        Forks that stay keep the messages they read. Returns the deleted ids.
        A running agent is `AgentBusy`; one another live runtime drives is
        `LeaseUnavailable`. `store.vacuum()` gives the space back to the disk."""
        self._ensure_open()
        records = self.store.list_agents(self.runtime_id)
        target = next((r for r in records if r.id == name_or_id), None) or next(
            (r for r in records if r.name == name_or_id and r.kind == "agent"), None)
        if target is None:
            known = ", ".join(r.name for r in records if r.kind == "agent") or "none"
            raise AgentNotFound(f"no stored agent '{name_or_id}' in runtime '{self.runtime_id}' "
                                f"(stored: {known})")
        doomed = _with_dependents(records, target.id, with_forks=with_forks)
        busy = [a.name for i in doomed if (a := self._agents.get(i)) is not None and a.is_running]
        if busy:
            raise AgentBusy(f"cannot delete while {', '.join(busy)} runs; stop or cancel it first")
        taken: list[str] = []
        try:
            for agent_id in doomed:
                if agent_id not in self._leases.held:
                    self._leases.acquire(agent_id)
                    taken.append(agent_id)
        except MentraError:
            # Another runtime drives one of them: delete nothing, and let go of the rest.
            self.store.release_leases(self._leases.token, taken)
            self._leases.held.difference_update(taken)
            raise
        await self._close_agents([a for i in doomed if (a := self._agents.get(i)) is not None])
        self.store.delete_agents(doomed, token=self._leases.token)
        self._leases.held.difference_update(doomed)
        return doomed

    def resume_agent(self, agent_id: str) -> Agent:
        """Load one persisted agent, taking its lease and applying crash recovery,
        then run the extensions' resume hooks (which may revive agents it started).

        Returns the live agent if this runtime already drives it (the hooks run
        again: they must be idempotent, e.g. waking agents for new mail).
        """
        agent = self._load(agent_id)
        self._after_resume(self.runtime_id, [agent])
        return agent

    def _load(self, agent_id: str) -> Agent:
        """The one way an agent is loaded: lease, load, recovery, extensions attached."""
        self._ensure_open()
        live = self._agents.get(agent_id)
        if live is not None:
            if live.state.stale and not live.is_running:
                live.sync_with_store()
            return live
        # Take the lease first, then load once: transcripts can be long.
        self._leases.acquire(agent_id)
        self._mail.start()
        try:
            # Transcripts load lazily (a long one is read when first needed), except
            # for an agent cut mid-run, whose recovery must look at its last turn.
            persisted = self.store.load_agent(agent_id, transcript=False)
            if persisted is None:
                raise AgentNotFound(
                    f"no agent with id {agent_id} in {self.store!r}; rt.list_persisted_agents() "
                    "shows the stored ones"
                )
            if persisted.run is not None:
                persisted = self.store.load_agent(agent_id) or persisted
                persisted = recover(self.store, persisted, token=self._leases.token)
            # Building the agent reads its config and state rows, and its extensions
            # settle their state: a failure there must release the lease just the same.
            return self._adopt(persisted)
        except MentraError:
            self._agents.pop(agent_id, None)
            self.store.release_leases(self._leases.token, [agent_id])
            self._leases.held.discard(agent_id)
            raise

    async def release_agent(self, agent_id: str) -> None:
        """Stop driving agent `agent_id` without changing it: it leaves this runtime
        and its lease is released (`rt.resume_agent(agent_id)` loads it again).
        Refused while it runs; nothing to do if this runtime does not drive it."""
        agent = self._agents.get(agent_id)
        if agent is None:
            return
        if agent.is_running:
            raise AgentBusy(f"agent '{agent.name}' is running; wait for its run to end, or stop it first")
        await self._close_agents([agent])
        self.store.release_leases(self._leases.token, [agent.id])
        self._leases.held.discard(agent.id)

    def _adopt(self, persisted: PersistedAgent, config: AgentConfig | None = None) -> Agent:
        agent = Agent(self, persisted, self._extensions, config)  # the extensions attach themselves
        self._agents[agent.id] = agent
        return agent

    async def retire_agent(self, agent_id: str, new_name: str) -> list[str]:
        """Rename a stored lead agent to `new_name` and stop driving it, so its old
        name is free for a new agent; nothing of it is deleted (resume it by its
        new name). The live agents it started are closed with it (they stay stored
        under it, and resuming it revives them), so none keeps working for a lead
        nobody drives. Returns the names of those
        closed. Refused while it or one of them runs."""
        agent = self._load(agent_id)
        records = self.store.list_agents(self.runtime_id)
        dependents = [self._agents[i] for i in _with_dependents(records, agent_id, with_forks=False)[1:]
                      if i in self._agents]
        busy = [a.name for a in [agent, *dependents] if a.is_running]
        if busy:
            raise AgentBusy(f"{' and '.join(busy)} of '{agent.name}' {'is' if len(busy) == 1 else 'are'} "
                            "running; stop or interrupt it before replacing it")
        self.store.rename_agent(agent_id, new_name, token=self._leases.token)
        closed = [agent, *dependents]
        await self._close_agents(closed)
        released = [a.id for a in closed]
        self.store.release_leases(self._leases.token, released)
        self._leases.held.difference_update(released)
        return [a.name for a in dependents]

    async def _close_agents(self, agents: list[Agent]) -> None:
        """Stop driving `agents` (deleted or retired): out of this runtime, their
        extensions closed (what drives them on their own stops) and their state closed, every
        one of them even when closing another failed (the first failure is raised)."""
        failure: Exception | None = None
        for live in agents:
            self._agents.pop(live.id, None)
            try:
                for agent_extension in live.extensions:
                    await agent_extension.aclose()
            except Exception as err:
                failure = failure or err
            finally:
                live.state.close()
        if failure is not None:
            raise failure

    def _after_resume(self, runtime_id: str, agents: Sequence[AgentHandle]) -> None:
        for extension in self._extensions:
            extension.after_resume(runtime_id, agents)
        self._mail_arrived()  # mail posted while no process drove them

    def resume(self, runtime_id: str | None = None) -> list[Agent]:
        """Resume the lead agents persisted under `runtime_id` (default: this runtime's);
        the agents they started are revived by their extensions (and not returned)."""
        runtime_id = runtime_id or self.runtime_id
        records = [r for r in self.store.list_agents(runtime_id) if r.kind == "agent"]
        left: set[str] = set()
        for extension in self._extensions:
            left |= extension.agents_left_stored(self.store, runtime_id, records)
        leads = [self._load(record.id) for record in records if record.id not in left]
        self._after_resume(runtime_id, leads)
        return leads

    def resume_all(self) -> list[Agent]:
        """Resume every lead agent of this runtime's id (same as `resume()`)."""
        return self.resume(self.runtime_id)

    def list_persisted_agents(self, runtime_id: str | None = None) -> list[AgentRecord]:
        """Stored agents of `runtime_id` (default: this runtime's), leads and
        the agents they started, in creation order, without loading transcripts."""
        return self.store.list_agents(runtime_id or self.runtime_id)

    # --- lifecycle --------------------------------------------------------------

    def _ensure_open(self) -> None:
        if self._parts.closed:
            raise MentraError(f"runtime '{self.runtime_id}' is closed; create a new Runtime")

    def _prepare_run(self) -> None:
        self._ensure_open()
        self._parts.loop = asyncio.get_running_loop()
        self._leases.start_heartbeat()
        self._mail.start()

    # --- mail from anywhere ------------------------------------------------------

    def post(self, agent: str, content: str, *, sender: str = "user") -> int:
        """Leave `content` as durable mail for `agent` (a name in this runtime, or an
        id), whichever process or host drives it, and return at once (the mail's id).

        The owner wakes within a second and runs it as a turn (a user turn for a
        plain agent; an extension may deliver it its own way). With no owner
        running, the mail waits for the next `rt.resume()`.

        `sender` is the name the recipient reads in the mail's `from` (an extension
        may keep some names to itself). The mail also carries this runtime's id
        (`posted_by_runtime`), so a recipient can tell posted mail from other mail.
        The content is scrubbed of the secrets the runtime knows before it is stored.
        The first extension that carries mail for that agent (`RuntimeExtension.
        post_mail`) stores it.
        """
        self._ensure_open()
        record = self._find_record(agent)
        mail_id = next((posted for extension in self._extensions if (posted := extension.post_mail(
            self._services, record, sender, content)) is not None), None)
        if mail_id is None:
            raise AgentError(
                f"no extension of runtime '{self.runtime_id}' carries mail for '{record.name}' "
                f"(a {record.kind}); build the runtime with default_extensions()"
            )
        if record.id in self._agents:
            self._mail_arrived()  # ours: no need to wait for the signal
        return mail_id

    def _find_record(self, agent: str) -> AgentRecord:
        records = self.store.list_agents(self.runtime_id)
        by_id = [r for r in records if r.id == agent]
        leads = [r for r in records if r.kind == "agent" and r.name == agent]
        if by_id or leads:
            return (by_id or leads)[0]
        # Agents that others started, by name, when only one has it.
        started = [r for r in records if r.kind != "agent" and r.name == agent]
        if len(started) == 1:
            return started[0]
        persisted = self.store.load_agent(agent, transcript=False)  # an id of another runtime
        if persisted is not None:
            return persisted.record
        known = ", ".join(r.name for r in records if r.kind == "agent") or "none"
        raise AgentNotFound(
            f"no agent '{agent}' in runtime '{self.runtime_id}' (agents: {known}); give a name "
            "from that list or an agent id"
            + (f" ({len(started)} agents share that name: give an id)" if len(started) > 1 else "")
        )

    def _mail_arrived(self) -> None:
        if self._parts.closed:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # a sync caller: the watcher delivers it on the loop
        for extension in self._extensions:
            try:
                extension.mail_arrived()
            except Exception:
                log.exception("an extension failed to deliver mail")

    async def aclose(self) -> None:
        """Cancel running turns (they roll back), close the extensions (what they
        started stops), stop the heartbeat and the mail watcher, release every lease."""
        self._mail_finalizer.detach()
        await asyncio.to_thread(self._mail.close)
        self._finalizer.detach()
        await self._parts.close()
        self._services.store_io.close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
