"""Who is in a team and how each member is doing: `TeamMemberStatus`, `TeammateInfo`.

A teammate's status is idle, working, failed{error} or shutdown, persisted with
the teammate. It says what the teammate last did, not whether anything drives
it now: `TeammateInfo.alive` says whether its actor runs in this process (after
a restart a stored "working" teammate is not alive until the lead is resumed).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["TeamMemberStatus", "TeammateInfo"]


class TeamMemberStatus(BaseModel):
    """idle, working, failed{error} or shutdown.

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
