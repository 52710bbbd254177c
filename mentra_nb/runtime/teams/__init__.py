"""Teams: a lead agent and the persistent teammates it spawned.

    from mentra_nb.runtime import teams
    alice = await teams.spawn_teammate(lead, "alice", "researcher", "Find three sources on X")
    teams.send_team_message(lead, "alice", "Also check Y")   # = lead.send_team_message(...)

A package shaped like `subagents`: free functions taking the agent (`_api`),
the extension that plugs teams into a runtime (`_extension`), and behind them
the team itself (`_team`), what keeps a teammate working (`_actor`), how mail
reaches the model (`_inbox`), the team tools (`_tools`) and the rows the team
keeps in the store as records (`mail`).
"""

from mentra_nb.runtime.teams._api import (
    approve_request,
    broadcast_team_message,
    is_teammate,
    reject_request,
    send_team_message,
    send_team_request,
    spawn_teammate,
    team_requests,
    teammate,
    teammates,
)
from mentra_nb.runtime.teams._config import TeamConfig
from mentra_nb.runtime.teams._extension import TeamExtension
from mentra_nb.runtime.teams._inbox import (
    INBOX_MARKER,
    TeamInbox,
    format_inbox,
    holds_inbox,
    team_of,
)
from mentra_nb.runtime.teams._snapshot import TeammateInfo, TeamMemberStatus, TeamSnapshot
from mentra_nb.runtime.teams._team import (
    LEAD_ONLY_TOOLS,
    Team,
    post_mail,
    teammate_system_prompt,
)
from mentra_nb.runtime.teams._tools import lead_tools, teammate_tools
from mentra_nb.runtime.teams.mail import (
    MAIL,
    MEMBERS,
    REQUESTS,
    MemberState,
    TeamMessage,
    TeamMessageKind,
    TeamRequest,
    TeamRequestStatus,
)

__all__ = [
    "INBOX_MARKER",
    "LEAD_ONLY_TOOLS",
    "MAIL",
    "MEMBERS",
    "REQUESTS",
    "MemberState",
    "Team",
    "TeamConfig",
    "TeamExtension",
    "TeamInbox",
    "TeamMemberStatus",
    "TeamMessage",
    "TeamMessageKind",
    "TeamRequest",
    "TeamRequestStatus",
    "TeamSnapshot",
    "TeammateInfo",
    "approve_request",
    "broadcast_team_message",
    "format_inbox",
    "holds_inbox",
    "is_teammate",
    "lead_tools",
    "post_mail",
    "reject_request",
    "send_team_message",
    "send_team_request",
    "spawn_teammate",
    "team_of",
    "team_requests",
    "teammate",
    "teammate_system_prompt",
    "teammate_tools",
    "teammates",
]
