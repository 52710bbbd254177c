"""What teams add to `AgentConfig`: `team` and `teammate_max_rounds`."""

from __future__ import annotations

from pydantic import Field

from mentra_nb.runtime._extension_fields import ExtensionFields

__all__ = ["TeamConfig"]


class TeamConfig(ExtensionFields):
    """A lead sees the team tools (team_spawn, team_send, …) once it has a
    teammate; `team=True` offers them from the start so its model can spawn one.
    `teammate_max_rounds` (default 50) bounds the model calls per run of each
    teammate the agent spawns (a teammate works through its mail on its own, so it
    gets more rounds than a lead's turn); `spawn_teammate(..., max_rounds=N)` sets
    one teammate's."""

    team: bool = False
    teammate_max_rounds: int = Field(default=50, ge=1, le=1000)
