"""Teams: a lead agent and the persistent teammates it spawned.

    alice = await lead.spawn_teammate("alice", "researcher", "Find three sources on X")
    lead.send_team_message("alice", "Also check Y")

See `_team` for how a team works, `_actor` for what keeps a teammate working,
`_inbox` for how mail reaches the model and `_tools` for the team tools.
"""

from mentra_nb.runtime.teams._inbox import INBOX_MARKER, holds_inbox
from mentra_nb.runtime.teams._members import TeammateInfo, TeamMemberStatus
from mentra_nb.runtime.teams._team import (
    LEAD_ONLY_TOOLS,
    MEMBER_STATE_KEY,
    Team,
    TeamExtension,
    team_of,
    teammate_system_prompt,
)

__all__ = [
    "INBOX_MARKER",
    "LEAD_ONLY_TOOLS",
    "MEMBER_STATE_KEY",
    "Team",
    "TeamExtension",
    "TeamMemberStatus",
    "TeammateInfo",
    "holds_inbox",
    "team_of",
    "teammate_system_prompt",
]
