"""The narrow handle the turn loop and the extensions get, instead of `Runtime` privates.

`Services` is what they may use of the runtime that drives an agent: the store
and this runtime's lease token (every write goes through it), the tracer provider, `create_agent` /
`load_agent` / `live_agent`, the provider registry, whether the runtime is
closed, and the other registered extensions. `AgentHandle` is an agent as they
see it: its identity and config, its `AgentState` (read it; change it through
its named operations, which persist, then emit and notify), and the few things
they may ask of it (start a run, stop, cancel, update its profile, ask the
user's approval).

Extensions and the turn loop import this module, never `Agent` or `Runtime`,
so the core does not depend on them and they do not depend on each other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from mentra_nb.messages import Message
from mentra_nb.providers.base import ModelInfo
from mentra_nb.providers.registry import ProviderRegistry
from mentra_nb.runtime._config import AgentConfig
from mentra_nb.runtime._snapshot import ApprovalDecision
from mentra_nb.runtime._state import AgentState
from mentra_nb.runtime._store_io import StoreIO
from mentra_nb.status import AgentStatus
from mentra_nb.store.base import AgentKind, Store

__all__ = ["AgentHandle", "CreateAgent", "HasServices", "Services"]

E = TypeVar("E")


class AgentHandle(Protocol):
    """An agent as tools, the turn loop and extensions see it (`Agent` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> AgentKind: ...
    @property
    def parent_id(self) -> str | None: ...
    @property
    def role(self) -> str | None: ...
    @property
    def model(self) -> ModelInfo: ...
    @property
    def config(self) -> AgentConfig: ...
    @property
    def status(self) -> AgentStatus: ...
    @property
    def is_running(self) -> bool: ...
    @property
    def current_run(self) -> asyncio.Task[Message] | None: ...
    @property
    def state(self) -> AgentState: ...
    @property
    def services(self) -> Services: ...
    @property
    def history(self) -> list[Message]: ...
    @property
    def last_message(self) -> Message | None: ...
    @property
    def resumable_turn(self) -> Message | None: ...

    def extension(self, kind: type[E]) -> E | None: ...
    async def ask_approval(self, name: str, input: dict[str, Any]) -> ApprovalDecision: ...
    async def start_run(self, opening: Sequence[Message] = ()) -> Message: ...
    def stop(self, now: bool = False) -> None: ...
    def cancel(self) -> None: ...
    def update_profile(self, *, role: str | None, config: AgentConfig) -> None: ...


class CreateAgent(Protocol):
    def __call__(self, name: str, model: str | ModelInfo, config: AgentConfig | None = None, *,
                 kind: AgentKind = "agent", parent_id: str | None = None,
                 role: str | None = None) -> AgentHandle: ...


class HasServices(Protocol):
    """A runtime or an agent: anything that can hand out its `Services`."""

    @property
    def services(self) -> Services: ...


class Services:
    """What the turn loop and extensions may use of their runtime. Built by the
    `Runtime`; one per runtime, shared by its agents."""

    def __init__(
        self, *, runtime_id: str, store: Store, token: str, providers: ProviderRegistry,
        create_agent: CreateAgent, load_agent: Callable[[str], AgentHandle],
        live_agent: Callable[[str], AgentHandle | None], is_closed: Callable[[], bool],
        prepare_run: Callable[[], None], extensions: Sequence[object], workspace_root: Path,
        tracer_provider: object | None = None,
    ) -> None:
        self.runtime_id = runtime_id
        # The built-in file tools' folder: its .env files hold secrets to scrub from tool results.
        self.workspace_root = workspace_root
        self.store = store
        # How code on the runtime's loop waits for the store (off the loop for a network store).
        self.store_io = StoreIO(store)
        self.token = token
        self.providers = providers
        self.create_agent = create_agent
        self._load_agent = load_agent
        self._live_agent = live_agent
        self._is_closed = is_closed
        self._prepare_run = prepare_run
        self._extensions = extensions
        # OpenTelemetry's TracerProvider for runs' spans (None: the global one, if set).
        self.tracer_provider = tracer_provider

    def __repr__(self) -> str:
        return f"<Services of runtime {self.runtime_id!r}>"

    @property
    def closed(self) -> bool:
        return self._is_closed()

    def load_agent(self, agent_id: str) -> AgentHandle:
        """The live agent `agent_id`, or load it from the store as `rt.resume_agent`
        does (lease, crash recovery, extension hooks)."""
        return self._load_agent(agent_id)

    def live_agent(self, agent_id: str) -> AgentHandle | None:
        """The agent `agent_id` if this runtime drives it now."""
        return self._live_agent(agent_id)

    def prepare_run(self) -> None:
        """Before a run starts: fail if the runtime is closed, keep its leases renewed."""
        self._prepare_run()

    def extension(self, kind: type[E]) -> E | None:
        """The registered runtime extension of type `kind`, if any."""
        for extension in self._extensions:
            if isinstance(extension, kind):
                return extension
        return None
