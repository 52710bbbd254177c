"""What subagents add to an agent's snapshot: the children of its tree
(`SubagentSnapshot`, read typed with `SubagentSnapshot.of(snapshot)`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.runtime._extension_fields import ExtensionFields

__all__ = ["SubagentSnapshot", "SubagentStatus", "SubagentSummary"]


SubagentStatus = Literal["pending_init", "running", "interrupted", "completed", "errored"]
"""A subagent's status in its tree."""


class SubagentSummary(BaseModel):
    """One child of a subagent tree as an agent snapshot lists it."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    path: str
    name: str  # the last path segment: the task name
    agent_id: str | None
    status: SubagentStatus
    model: str
    depth: int
    # Tools whose calls wait for the user's approval (the status stays running).
    waiting_for_approval: list[str] = Field(default_factory=list)


class SubagentSnapshot(ExtensionFields):
    """`snapshot.subagents`: every child of the agent's tree."""

    subagents: list[SubagentSummary] = Field(default_factory=list)
