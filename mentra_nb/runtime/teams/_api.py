"""The Python face of teams: free functions taking the agent, as in `subagents`.

    from mentra_nb.runtime import teams
    alice = await teams.spawn_teammate(lead, "alice", "researcher", "Find three sources on X")
    teams.send_team_message(lead, "alice", "Also check Y")
    teams.teammates(lead)                       # [TeammateInfo, …]
    teams.approve_request(lead, request_id)     # e.g. alice's plan_approval

`Agent` keeps the contract's methods (`lead.spawn_teammate(...)`,
`lead.send_team_message(...)`, …); each is one call of a function here. Call
them on the runtime's loop (a notebook host hands them to its loop thread).
"""

from __future__ import annotations

from mentra_nb.errors import AgentError, AgentNotFound
from mentra_nb.providers.base import ModelInfo
from mentra_nb.runtime._services import AgentHandle
from mentra_nb.runtime.teams._inbox import TeamInbox, team_of
from mentra_nb.runtime.teams._snapshot import TeammateInfo
from mentra_nb.runtime.teams.mail import TeamRequest, TeamRequestStatus
from mentra_nb.store.base import AgentRecord

__all__ = [
    "approve_request",
    "broadcast_team_message",
    "is_teammate",
    "reject_request",
    "send_team_message",
    "send_team_request",
    "spawn_teammate",
    "team_requests",
    "teammate",
    "teammates",
]


async def spawn_teammate(
    lead: AgentHandle, name: str, role: str, prompt: str | None = None, *,
    model: str | ModelInfo | None = None, max_rounds: int | None = None,
) -> AgentHandle:
    """Spawn a persistent teammate of `lead`; `prompt` becomes its first mail.

    It gets the lead's config (and model, unless `model` is given) with a
    teammate system prompt; it works on its own, woken by team mail.
    """
    if lead.kind != "agent":
        raise AgentError(f"only a lead agent can spawn teammates; '{lead.name}' is a {lead.kind}")
    return await team_of(lead).spawn(name, role, prompt, model=model, max_rounds=max_rounds)


def send_team_message(sender: AgentHandle, to: str, content: str) -> None:
    """Put `content` in team member `to`'s inbox, from `sender` (wakes a teammate)."""
    team_of(sender).send(sender.name, to, content)


def broadcast_team_message(lead: AgentHandle, content: str) -> list[str]:
    """Send `content` to every other member of `lead`'s team; returns their names."""
    if lead.kind != "agent":
        raise AgentError(f"only the lead may broadcast; '{lead.name}' can send_team_message")
    return team_of(lead).broadcast(lead.name, content)


def is_teammate(agent: AgentHandle | AgentRecord) -> bool:
    """Whether `agent` (live, or a stored `AgentRecord`) is a teammate: not a lead,
    nor an agent outside any team."""
    return agent.kind == "teammate"


def teammates(lead: AgentHandle) -> list[TeammateInfo]:
    """`lead`'s teammates, with their status and whether they are alive here."""
    inbox = lead.extension(TeamInbox)
    return inbox.team.teammates() if inbox is not None and not is_teammate(lead) else []


def teammate(lead: AgentHandle, name: str) -> AgentHandle:
    """The live teammate called `name` (to watch it or read its history)."""
    agent = team_of(lead).live_agent(name)
    if agent is None or agent is lead:
        raise AgentNotFound(
            f"no live teammate '{name}' in {lead.name}'s team; lead.teammates lists them "
            "(rt.resume() revives the stored ones)"
        )
    return agent


def send_team_request(sender: AgentHandle, to: str, protocol: str, content: str) -> TeamRequest:
    """Ask member `to` to approve or reject something (e.g. protocol "shutdown");
    the answer arrives in `sender`'s inbox."""
    return team_of(sender).request(sender.name, to, protocol, content)


def team_requests(member: AgentHandle, status: TeamRequestStatus | None = "pending") -> list[TeamRequest]:
    """Protocol requests sent to or by `member` (default: the pending ones)."""
    return team_of(member).list_requests(member.name, status=status)


def approve_request(member: AgentHandle, request_id: str, reason: str | None = None) -> TeamRequest:
    """Approve a pending request addressed to `member` (e.g. a teammate's plan)."""
    return team_of(member).respond(member.name, request_id, True, reason)


def reject_request(member: AgentHandle, request_id: str, reason: str) -> TeamRequest:
    """Reject a pending request addressed to `member`; the requester reads `reason`."""
    return team_of(member).respond(member.name, request_id, False, reason)
