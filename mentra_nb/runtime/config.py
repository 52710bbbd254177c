"""Per-agent configuration, persisted with the agent as JSON."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentConfig"]


class AgentConfig(BaseModel):
    """How an agent talks to its model and which tools it sees.

    `tools` is an allow list (None: every registered tool); `hidden_tools` is
    removed from whatever remains. `max_rounds` bounds model calls per run.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    system: str | None = None
    # A lead sees the team tools (team_spawn, team_send, …) once it has a
    # teammate; `team=True` offers them from the start so its model can spawn one.
    team: bool = False
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    max_rounds: int = Field(default=20, ge=1, le=1000)
    tools: list[str] | None = None
    hidden_tools: list[str] = Field(default_factory=list)

    def allows_tool(self, name: str) -> bool:
        if name in self.hidden_tools:
            return False
        return self.tools is None or name in self.tools
