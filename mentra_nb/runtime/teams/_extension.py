"""How teams plug into a `Runtime`: `TeamExtension`, one of its default extensions.

It declares the team's config fields (`TeamConfig`: `team`,
`teammate_max_rounds`), snapshot fields (`TeamSnapshot`: `teammates`,
`pending_team_messages`) and the contract's agent methods
(`lead.spawn_teammate(...)`, `lead.send_team_message(...)`, …, each one of the
`teams` functions). It attaches a `TeamInbox` to every lead and teammate (their
inbox, team tools and snapshot fields), carries `rt.post` mail for leads and
teammates, and after every resume path revives the resumed leads' teammates
that did not shut down.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from mentra_nb.runtime._extensions import AgentExtension, RuntimeExtension
from mentra_nb.runtime._services import AgentHandle, Services
from mentra_nb.runtime.teams import _api
from mentra_nb.runtime.teams._config import TeamConfig
from mentra_nb.runtime.teams._inbox import TeamInbox
from mentra_nb.runtime.teams._snapshot import TeamSnapshot
from mentra_nb.runtime.teams._team import TEAMMATE_TOOL_NAMES, Team, post_mail
from mentra_nb.runtime.teams._tools import LEAD_TOOL_NAMES, team_tools_for
from mentra_nb.store.base import AgentRecord

__all__ = ["TeamExtension"]


class TeamExtension(RuntimeExtension):
    """Inboxes and team tools for leads and teammates, and teammate revival."""

    config = TeamConfig
    snapshot = TeamSnapshot
    agent_kinds = ("teammate",)
    agent_api: ClassVar[dict[str, Any]] = {
        "spawn_teammate": _api.spawn_teammate,
        "send_team_message": _api.send_team_message,
        "broadcast_team_message": _api.broadcast_team_message,
        "teammates": property(_api.teammates),
        "teammate": _api.teammate,
        "send_team_request": _api.send_team_request,
        "team_requests": _api.team_requests,
        "approve_request": _api.approve_request,
        "reject_request": _api.reject_request,
        "is_teammate": property(_api.is_teammate),
    }

    def __init__(self) -> None:
        self._teams: dict[str, Team] = {}

    def team(self, services: Services, team_id: str) -> Team:
        team = self._teams.get(team_id)
        if team is None:
            team = self._teams[team_id] = Team(services, team_id)
        return team

    def _lead_closed(self, team: Team) -> None:
        """The team's lead left this runtime (released, retired, deleted): a team with
        nothing running is forgotten, so mail is not checked for it on every wake
        (a batch job releases a lead per row; resuming the lead attaches a new team)."""
        if team.idle and self._teams.get(team.id) is team:
            team.lead = None
            del self._teams[team.id]

    def tool_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*LEAD_TOOL_NAMES, *TEAMMATE_TOOL_NAMES)))

    def attach(self, agent: AgentHandle) -> AgentExtension | None:
        if agent.kind == "agent":
            team = self.team(agent.services, agent.id)
            team.lead = agent
        elif agent.kind == "teammate" and agent.parent_id is not None:
            team = self.team(agent.services, agent.parent_id)
        else:
            return None
        inbox = TeamInbox(team, agent, team_tools_for, self._lead_closed)
        # The agent was just loaded (and crash-recovered): mail its last process
        # claimed is done if the transcript kept it, pending again if it was rolled back.
        inbox.settle()
        return inbox

    def after_resume(self, runtime_id: str, agents: Sequence[AgentHandle]) -> None:
        leads = [a for a in agents if a.kind == "agent"]
        if not leads:
            return
        # One read of the agent table, not one per resumed agent: only leads
        # with teammates have anyone to revive.
        with_team = {r.parent_id for r in leads[0].services.store.list_agents() if r.kind == "teammate"}
        for lead in leads:
            if lead.id in with_team:
                self.team(lead.services, lead.id).revive()

    def post_mail(self, services: Services, record: AgentRecord, sender: str, content: str) -> int | None:
        if record.kind not in ("agent", "teammate"):
            return None
        # A lead's team is its own id: mail for a plain agent waits in the team it would lead.
        team_id = record.parent_id if record.kind == "teammate" and record.parent_id else record.id
        return post_mail(services.store, team_id, record.name, sender, content,
                         runtime_id=services.runtime_id, workspace=services.workspace_root)

    def mail_arrived(self) -> None:
        for team in list(self._teams.values()):
            team.check_mail()

    async def aclose(self) -> None:
        for team in self._teams.values():
            await team.aclose()
