"""What an agent looks like at one instant: `AgentSnapshot`, and the rows it lists.

The rows that extensions contribute (`TeammateInfo`, `SubagentSummary`) and the
calls waiting for approval (`PendingApproval`) are defined here, with the
snapshot, so that the core depends on no extension: teams and subagents import
these models and fill them through the typed `SnapshotFields` hook.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.messages import Usage
from mentra_nb.status import AgentStatus, PendingToolUse

__all__ = [
    "AgentSnapshot",
    "AgentStatus",
    "ApprovalDecision",
    "PendingApproval",
    "PendingToolUse",
    "SnapshotFields",
    "SubagentStatus",
    "SubagentSummary",
    "TeamMemberStatus",
    "TeammateInfo",
]


class PendingApproval(BaseModel):
    """A tool call waiting for the user: shown in `snapshot.pending_approvals`."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    tool_use_id: str
    tool_name: str
    input: dict[str, Any] = Field(default_factory=dict)
    run_generation: int = 0
    requested_at: float = 0.0

    @property
    def reference(self) -> str:
        """`<call id>@<run>`: names this call in this run only (for `agent.approve`)."""
        return f"{self.tool_use_id}@{self.run_generation}"


class ApprovalDecision(BaseModel):
    """The user's answer to a paused call or question."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    approved: bool
    always: bool = False
    reason: str = ""


class TeamMemberStatus(BaseModel):
    """idle, working, failed{error} or shutdown.

    It says what the teammate last did, not whether anything drives it now:
    `TeammateInfo.alive` says whether its actor runs in this process.

        info.status == TeamMemberStatus.idle()
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: Literal["idle", "working", "failed", "shutdown"]
    error: str | None = None

    @classmethod
    def idle(cls) -> TeamMemberStatus:
        return cls(name="idle")

    @classmethod
    def working(cls) -> TeamMemberStatus:
        return cls(name="working")

    @classmethod
    def failed(cls, error: str) -> TeamMemberStatus:
        return cls(name="failed", error=error)

    @classmethod
    def shutdown(cls) -> TeamMemberStatus:
        return cls(name="shutdown")

    def __str__(self) -> str:
        return f"failed: {self.error}" if self.name == "failed" else self.name


class TeammateInfo(BaseModel):
    """One teammate as its lead's snapshot shows it."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str
    agent_id: str
    role: str
    model: str
    status: TeamMemberStatus
    alive: bool = False  # its actor runs in this process
    unread: int = 0  # team mail waiting for it


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


class SnapshotFields(TypedDict, total=False):
    """What an extension adds to its agent's snapshot (`AgentExtension.snapshot_fields`)."""

    pending_team_messages: int
    teammates: list[TeammateInfo]
    subagents: list[SubagentSummary]


class AgentSnapshot(BaseModel):
    """An immutable picture of an agent; observers get a new one on every change."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    agent_id: str
    name: str
    model: str
    status: AgentStatus = Field(default_factory=AgentStatus.idle)
    run_generation: int = 0
    history_len: int = 0
    current_text: str = ""
    current_thinking: str = ""
    pending_tool_uses: list[PendingToolUse] = Field(default_factory=list)
    # Calls paused until the user approves or denies them (the status stays
    # executing_tool{id, name} of the call being decided).
    pending_approvals: list[PendingApproval] = Field(default_factory=list)
    pending_team_messages: int = 0
    teammates: list[TeammateInfo] = Field(default_factory=list)  # a lead's team
    subagents: list[SubagentSummary] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
