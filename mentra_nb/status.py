"""Agent status vocabulary, shared by the store (which persists it) and the runtime."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["AgentStatus", "PendingToolUse", "StatusName"]

StatusName = Literal[
    "idle", "awaiting_model", "streaming", "executing_tool", "interrupted", "finished", "failed"
]
"""The name of an agent's status, as stored and shown."""


class AgentStatus(BaseModel):
    """One of idle, awaiting_model, streaming, executing_tool{tool_id, tool_name},
    interrupted (only after crash recovery), finished, failed{error}.

        snapshot.status == AgentStatus.streaming()
        snapshot.status.name == "executing_tool"
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: StatusName
    tool_id: str | None = None
    tool_name: str | None = None
    error: str | None = None

    @classmethod
    def idle(cls) -> AgentStatus:
        return cls(name="idle")

    @classmethod
    def awaiting_model(cls) -> AgentStatus:
        return cls(name="awaiting_model")

    @classmethod
    def streaming(cls) -> AgentStatus:
        return cls(name="streaming")

    @classmethod
    def executing_tool(cls, tool_id: str, tool_name: str) -> AgentStatus:
        return cls(name="executing_tool", tool_id=tool_id, tool_name=tool_name)

    @classmethod
    def interrupted(cls) -> AgentStatus:
        return cls(name="interrupted")

    @classmethod
    def finished(cls) -> AgentStatus:
        return cls(name="finished")

    @classmethod
    def failed(cls, error: str) -> AgentStatus:
        return cls(name="failed", error=error)

    @property
    def is_running(self) -> bool:
        return self.name in ("awaiting_model", "streaming", "executing_tool")

    def __str__(self) -> str:
        if self.name == "executing_tool":
            return f"executing_tool({self.tool_name})"
        if self.name == "failed":
            return f"failed: {self.error}"
        return self.name


class PendingToolUse(BaseModel):
    """A tool call of the current round that has no result yet (`input_json` may be partial)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    name: str
    input_json: str = ""
