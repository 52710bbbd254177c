"""What an agent looks like at one instant: `AgentSnapshot`, and the rows it lists.

Extensions add fields of their own (declared by `RuntimeExtension.snapshot`,
filled by `AgentExtension.snapshot_fields()`); they sit flat beside the core's
(`snapshot.<field>`) and `ExtensionFields.of(snapshot)` reads one extension's
typed. The calls waiting for approval (`PendingApproval`) are the core's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


# What an extension's `AgentExtension.snapshot_fields()` returns: values of the
# fields its `RuntimeExtension.snapshot` model declares.
SnapshotFields = Mapping[str, Any]
"""Values of an extension's snapshot fields, by field name (`AgentExtension.snapshot_fields()`)."""


class AgentSnapshot(BaseModel):
    """An immutable picture of an agent; observers get a new one on every change.
    The registered extensions' fields are extra fields, set on every snapshot."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="allow")

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
    usage: Usage = Field(default_factory=Usage)
