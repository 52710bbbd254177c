"""The tools a team member's model uses to work with its team.

Lead: team_spawn, team_send, team_broadcast, team_read_inbox, team_request,
team_respond, team_list_requests. Teammate: the same without the lead-only
team_spawn and team_broadcast, plus idle. A lead is offered them once it has a
teammate (or with `AgentConfig(team=True)`), so agents without a team see no
team tools. All are async: sync tools run in a worker thread, and these touch objects of
the runtime's event loop. Every mistake (unknown recipient, answering someone else's
request, a request that is no longer pending…) comes back to the model as an
error result that says what to do instead.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from mentra_nb.errors import MentraError
from mentra_nb.runtime._services import AgentHandle
from mentra_nb.runtime.teams._config import TeamConfig
from mentra_nb.runtime.teams._inbox import TeamInbox, format_inbox
from mentra_nb.runtime.teams._team import TEAMMATE_TOOL_NAMES, Team
from mentra_nb.runtime.tools import Tool, ToolContext, ToolOutput, tool

__all__ = ["LEAD_TOOL_NAMES", "lead_tools", "team_tools_for", "teammate_tools"]


def _team(ctx: ToolContext) -> tuple[Team, TeamInbox]:
    inbox = ctx.agent.extension(TeamInbox)
    if inbox is not None:
        return inbox.team, inbox
    raise MentraError(f"agent '{ctx.agent_name}' is not part of a team")


async def _guarded(body: Callable[[], Awaitable[str]]) -> str | ToolOutput:
    try:
        return await body()
    except MentraError as err:
        return ToolOutput(content=str(err), is_error=True)


def _only_lead(ctx: ToolContext, team: Team, what: str) -> None:
    if ctx.agent.kind == "teammate":
        raise MentraError(
            f"only the lead ({team.lead_name}) may {what}; ask it with team_send"
        )


async def team_spawn(
    ctx: ToolContext,
    name: Annotated[str, Field(description="The new teammate's name: letters, digits, '_', '.', '-'")],
    role: Annotated[str, Field(description="What the teammate does, e.g. 'researcher'")],
    prompt: Annotated[str | None, Field(description="Its first task, delivered as team mail")] = None,
) -> str | ToolOutput:
    """Spawn a persistent teammate that works on its own and talks to you through team mail."""
    team, _ = _team(ctx)

    async def body() -> str:
        _only_lead(ctx, team, "spawn teammates")
        agent = await team.spawn(name, role, prompt)
        started = " and sent it its first task" if prompt else "; send it work with team_send"
        return f"spawned teammate '{agent.name}' ({agent.role}){started}"

    return await _guarded(body)


async def team_send(
    ctx: ToolContext,
    to: Annotated[str, Field(description="The member's name")],
    content: Annotated[str, Field(description="The message")],
) -> str | ToolOutput:
    """Send a message to one team member's inbox."""
    team, _ = _team(ctx)

    def body() -> str:
        team.send(ctx.agent_name, to, content)
        return f"sent to {to.strip()}"

    return _sync_guarded(body)


async def team_broadcast(
    ctx: ToolContext, content: Annotated[str, Field(description="The message")]
) -> str | ToolOutput:
    """Send a message to every other team member."""
    team, _ = _team(ctx)

    def body() -> str:
        _only_lead(ctx, team, "broadcast")
        recipients = team.broadcast(ctx.agent_name, content)
        return f"sent to {', '.join(recipients)}" if recipients else "nobody else is in the team yet"

    return _sync_guarded(body)


async def team_read_inbox(ctx: ToolContext) -> str | ToolOutput:
    """Read team mail that arrived since the start of this round."""
    _, inbox = _team(ctx)

    def body() -> str:
        mail = inbox.claim()
        return format_inbox(mail) if mail else "no new team mail"

    return _sync_guarded(body)


async def team_request(
    ctx: ToolContext,
    to: Annotated[str, Field(description="The member who must approve or reject it")],
    protocol: Annotated[str, Field(description="'plan_approval', 'shutdown' or another protocol name")],
    content: Annotated[str, Field(description="What is asked, e.g. the plan")],
) -> str | ToolOutput:
    """Ask a member to approve or reject something; the answer arrives as team mail."""
    team, _ = _team(ctx)

    def body() -> str:
        request = team.request(ctx.agent_name, to, protocol, content)
        return json.dumps({"request_id": request.id, "protocol": request.protocol,
                           "to": request.recipient, "status": request.status})

    return _sync_guarded(body)


async def team_respond(
    ctx: ToolContext,
    request_id: Annotated[str, Field(description="The request_id from the request")],
    approve: Annotated[bool, Field(description="true to approve, false to reject")],
    reason: Annotated[str | None, Field(description="Why; the requester reads it")] = None,
) -> str | ToolOutput:
    """Approve or reject a pending request addressed to you."""
    team, _ = _team(ctx)

    def body() -> str:
        request = team.respond(ctx.agent_name, request_id, approve, reason)
        return f"{request.status} {request.protocol} request {request.id} from {request.sender}"

    return _sync_guarded(body)


async def team_list_requests(
    ctx: ToolContext,
    status: Literal["pending", "approved", "rejected"] | None = None,
    protocol: str | None = None,
    counterparty: Annotated[str | None, Field(description="Only requests with this member")] = None,
    direction: Literal["inbound", "outbound", "any"] = "any",
) -> str | ToolOutput:
    """List protocol requests you sent (outbound) or received (inbound)."""
    team, _ = _team(ctx)

    def body() -> str:
        found = team.list_requests(ctx.agent_name, status=status, protocol=protocol,
                                   counterparty=counterparty, direction=direction)
        return json.dumps([
            {"request_id": r.id, "protocol": r.protocol, "from": r.sender, "to": r.recipient,
             "content": r.content, "status": r.status, "reason": r.reason}
            for r in found
        ])

    return _sync_guarded(body)


async def idle(ctx: ToolContext) -> str:
    """Stop working until new team mail arrives (ends this turn)."""
    # A graceful stop: the run ends after this round's results are committed.
    ctx.agent.stop()
    return "going idle; you will be woken when new team mail arrives"


def _sync_guarded(body: Callable[[], str]) -> str | ToolOutput:
    try:
        return body()
    except MentraError as err:
        return ToolOutput(content=str(err), is_error=True)


@functools.cache
def _tools() -> dict[str, Tool]:
    # Built on first use, not at import: a tool's input schema is built with it,
    # and `import mentra_nb` builds no schema (tests/test_package.py).
    read_only = {"team_list_requests", "idle"}
    functions: list[Callable[..., Awaitable[Any]]] = [team_spawn, team_send, team_broadcast, team_read_inbox, team_request,
                 team_respond, team_list_requests, idle]
    return {f.__name__: tool(name=f.__name__, read_only=f.__name__ in read_only)(f) for f in functions}


LEAD_TOOL_NAMES = ("team_spawn", "team_send", "team_broadcast", "team_read_inbox", "team_request",
                   "team_respond", "team_list_requests")


def lead_tools() -> list[Tool]:
    """The team tools a lead is offered."""
    return [_tools()[name] for name in LEAD_TOOL_NAMES]


def teammate_tools() -> list[Tool]:
    """The team tools a teammate is offered."""
    return [_tools()[name] for name in TEAMMATE_TOOL_NAMES]


def team_tools_for(team: Team, agent: AgentHandle) -> list[Tool]:
    if agent.kind == "teammate":
        return teammate_tools()
    if TeamConfig.of(agent.config).team or team.has_members():
        return lead_tools()
    return []
