"""What teams add to an agent's snapshot: its unread team mail and, for a lead, its
teammates (`TeamSnapshot`, read typed with `TeamSnapshot.of(snapshot)`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.runtime._extension_fields import ExtensionFields

__all__ = ["TeamMemberStatus", "TeamSnapshot", "TeammateInfo"]


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


class TeamSnapshot(ExtensionFields):
    """`snapshot.pending_team_messages` (mail waiting for this agent) and
    `snapshot.teammates` (a lead's team)."""

    pending_team_messages: int = 0
    teammates: list[TeammateInfo] = Field(default_factory=list)
