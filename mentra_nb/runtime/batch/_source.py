"""What a batch job needs of the agent it maps (an `Agent` is one), so this package
depends on the runtime's public surface and not on `_agent.py` (which imports it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from mentra_nb.messages import Usage
from mentra_nb.runtime._output import RunResult
from mentra_nb.runtime._services import Services
from mentra_nb.runtime._state import AgentState
from mentra_nb.runtime.events import AgentEvent
from mentra_nb.runtime.tools import Tool
from mentra_nb.store.base import AgentRecord

__all__ = ["JobRuntime", "RowAgent", "RowSource"]


class JobRuntime(Protocol):
    """The runtime that drives the mapped agent."""

    @property
    def runtime_id(self) -> str: ...
    def list_persisted_agents(self, runtime_id: str | None = None) -> list[AgentRecord]: ...
    async def delete_agent(self, name_or_id: str, *, with_forks: bool = False) -> list[str]: ...
    async def release_agent(self, agent_id: str) -> None: ...


class RowSource(Protocol):
    """What a job forks its rows from: the mapped agent in the notebook, or, in a
    worker, the stored agent another process drives."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def services(self) -> Services: ...
    @property
    def runtime(self) -> JobRuntime: ...
    def fork(self, new_name: str, at: int | None = None) -> RowAgent: ...


@runtime_checkable
class RowAgent(RowSource, Protocol):
    """The mapped agent, and each row's fork of it."""

    @property
    def state(self) -> AgentState: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def is_running(self) -> bool: ...
    def tools(self) -> list[Tool]: ...
    def on_event(self, callback: Callable[[AgentEvent], None], *,
                 deltas: bool = True) -> Callable[[], None]: ...
    async def run(self, content: str, *, output: type[BaseModel] | None = None,
                  output_retries: int | None = None) -> RunResult[BaseModel]: ...
