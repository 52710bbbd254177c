"""How capabilities such as teams and subagents plug into the turn loop.

A `RuntimeExtension` is installed on a `Runtime`; for each agent the runtime
spawns or loads it may `attach` an `AgentExtension`, which can:
- offer extra tools to that agent (`tools`),
- add messages at the start of every round (`before_round`; they are
  committed with the run and rolled back with it),
- learn how each run ended (`after_run`), e.g. to acknowledge or requeue mail,
- contribute snapshot fields (`snapshot_fields`: `teammates`, `subagents`,
  `pending_team_messages`).
The turn loop stays ignorant of what the extensions are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mentra_nb.messages import Message

if TYPE_CHECKING:
    from mentra_nb.runtime._agent import Agent
    from mentra_nb.runtime.tools import Tool

__all__ = ["AgentExtension", "RuntimeExtension"]


class AgentExtension:
    """Per-agent behaviour. Override what you need; the defaults do nothing."""

    def tools(self) -> list[Tool]:
        return []

    async def before_round(self) -> list[Message]:
        return []

    def after_run(self, succeeded: bool) -> None:
        """Called once per run, after it was committed (True) or rolled back (False)."""

    def snapshot_fields(self) -> dict[str, Any]:
        return {}

    async def aclose(self) -> None:
        """The runtime is closing."""


class RuntimeExtension:
    """Runtime-wide behaviour; `attach` decides per agent."""

    def attach(self, agent: Agent) -> AgentExtension | None:
        return None

    def after_resume(self, runtime_id: str, agents: list[Agent]) -> None:
        """`rt.resume(runtime_id)` loaded these lead agents."""

    async def aclose(self) -> None:
        """The runtime is closing (after its agents' runs were cancelled)."""
