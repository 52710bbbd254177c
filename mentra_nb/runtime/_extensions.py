"""How capabilities such as teams and subagents plug into the runtime.

A `Runtime` is given a list of `RuntimeExtension`s (`default_extensions()`:
teams and subagents, unless the caller passes its own list). For each agent it
spawns or loads, every extension may `attach` an `AgentExtension`, which can:
- offer extra tools to that agent (`tools`),
- add messages at the start of every round (`before_round`; they are
  committed with the run and rolled back with it),
- learn how each run ended (`after_run`), e.g. to acknowledge or requeue mail,
- contribute snapshot fields through the typed `SnapshotFields` hook,
- refuse calls that would wait for the user's approval (`refuse_approval`).
After every resume path (`rt.resume_agent`, `rt.resume`, `rt.resume_all`, and
the loads extensions do themselves) the runtime calls `after_resume` with the
agents it loaded, e.g. to revive a lead's teammates.

Extensions see agents as `AgentHandle`s and their runtime through `Services`
(`_services.py`); the turn loop stays ignorant of what the extensions are.
"""

from __future__ import annotations

from collections.abc import Sequence

from mentra_nb.messages import Message
from mentra_nb.runtime._services import AgentHandle
from mentra_nb.runtime._snapshot import SnapshotFields
from mentra_nb.runtime.tools import Tool
from mentra_nb.store.base import AgentRecord, Store

__all__ = ["AgentExtension", "RuntimeExtension"]


class AgentExtension:
    """Per-agent behaviour. Override what you need; the defaults do nothing."""

    def tools(self) -> list[Tool]:
        return []

    async def before_round(self) -> list[Message]:
        return []

    def after_run(self, succeeded: bool) -> None:
        """Called once per run, after it was committed (True) or rolled back (False)."""

    def snapshot_fields(self) -> SnapshotFields:
        return {}

    def refuse_approval(self, tool_name: str) -> str | None:
        """A call of `tool_name` needs the user's approval: return an error text to
        refuse it at once without asking (e.g. a headless subagent), or None to ask."""
        return None

    async def aclose(self) -> None:
        """The runtime is closing."""


class RuntimeExtension:
    """Runtime-wide behaviour; `attach` decides per agent."""

    def attach(self, agent: AgentHandle) -> AgentExtension | None:
        return None

    def tool_names(self) -> tuple[str, ...]:
        """Every tool an attached extension may offer an agent (so a tool list
        naming one is not refused as unknown before the agent exists)."""
        return ()

    def after_resume(self, runtime_id: str, agents: Sequence[AgentHandle]) -> None:
        """A resume path loaded these agents (leads, teammates or subagents) of `runtime_id`."""

    def agents_left_stored(self, store: Store, runtime_id: str,
                           records: Sequence[AgentRecord]) -> set[str]:
        """Ids among the lead agents `records` of `runtime_id` that this extension loads
        itself when it needs them (a batch job's row forks): `rt.resume` leaves them
        in the store instead of loading them."""
        return set()

    def mail_arrived(self) -> None:
        """Mail may have been posted for agents of this runtime, by this process or
        another one (on the event loop)."""

    async def aclose(self) -> None:
        """The runtime is closing (after its agents' runs were cancelled)."""
