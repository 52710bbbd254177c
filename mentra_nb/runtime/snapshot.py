"""What an agent looks like at one instant: `AgentSnapshot` and `AgentStatus`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.messages import Usage
from mentra_nb.runtime.approvals import PendingApproval
from mentra_nb.runtime.subagents.picker import SubagentSummary
from mentra_nb.runtime.team_members import TeammateInfo, TeamMemberStatus
from mentra_nb.status import AgentStatus, PendingToolUse

__all__ = ["AgentSnapshot", "AgentStatus", "PendingApproval", "PendingToolUse", "TeamMemberStatus", "TeammateInfo"]

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
