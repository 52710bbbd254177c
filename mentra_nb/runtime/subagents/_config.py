"""What subagents add to `AgentConfig`: `subagents=True` or `SubagentLimits(...)`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from mentra_nb.runtime._config import ConfigModel
from mentra_nb.runtime._extension_fields import ExtensionFields

__all__ = ["SubagentConfig", "SubagentLimits"]


class SubagentLimits(ConfigModel):
    """How far an agent may delegate to subagents. Every count includes the root.

    `max_agents` bounds the whole tree, `max_concurrency` the agents working at
    once, `max_depth` how deep spawning may nest (a child at the limit can still
    work, it just cannot spawn). `approvals` says what happens when a child calls
    a tool that needs the user's approval: "ask" (default) pauses the child until
    the user answers (the SubagentPicker shows the call; the parent gets a notice
    that ends its `wait_agent`); "deny" refuses it at once with the error result
    "headless subagents cannot approve mutations".
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    max_agents: int = Field(default=32, ge=2, le=256)
    max_concurrency: int = Field(default=8, ge=2, le=64)
    max_depth: int = Field(default=4, ge=1, le=16)
    approvals: Literal["ask", "deny"] = "ask"

    @model_validator(mode="after")
    def _concurrency_fits_the_tree(self) -> SubagentLimits:
        if self.max_agents < self.max_concurrency:
            raise ValueError(
                f"subagent max agents must be at least max concurrency "
                f"(max_agents={self.max_agents}, max_concurrency={self.max_concurrency})"
            )
        return self


class SubagentConfig(ExtensionFields):
    """`AgentConfig(subagents=...)`: True or `SubagentLimits(...)` lets the agent
    delegate (None: no subagent tools)."""

    subagents: SubagentLimits | None = None

    @field_validator("subagents", mode="before")
    @classmethod
    def _subagents_switch(cls, value: Any) -> Any:
        # `subagents=True` is the common case: delegate with the default limits.
        if value is True:
            return SubagentLimits()
        return None if value is False else value
