"""A team member's inbox in the turn loop: `<team-inbox>` injection, ack, requeue.

At the start of every round the member's pending mail is claimed (pending →
inflight) and added as one user message,

    <team-inbox>
    [{"type": "message", "from": "lead", "content": "…", "timestamp": 1700000000}]
    </team-inbox>

which the turn loop commits with the run (and rolls back with it). An agent
with no teammates reads its mail (`rt.post` from another process) as a plain
user message instead: the contents, oldest first, one paragraph each. Each claim
records the transcript position its message is written at. When the run ends,
and again whenever the agent is loaded after a crash, every inflight message is
settled by looking at that position: if the transcript holds the inbox there
the mail was delivered (acked); if a rollback removed it, it goes back to
pending for the next wake. Mail is thus never lost and never delivered twice
into one durable transcript; a crash between a commit and its ack can only
repeat the ack.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from mentra_nb.errors import AgentError, MentraError
from mentra_nb.messages import Message, Role, TextBlock, ToolResultBlock
from mentra_nb.runtime._envelopes import envelope_json
from mentra_nb.runtime._extensions import AgentExtension
from mentra_nb.runtime._redaction import known_secrets, scrub
from mentra_nb.runtime._services import AgentHandle
from mentra_nb.runtime.teams import mail as _mail
from mentra_nb.runtime.teams._team import Team
from mentra_nb.runtime.teams.mail import TeamMail
from mentra_nb.runtime.tools import Tool

__all__ = ["INBOX_MARKER", "TeamInbox", "format_inbox", "holds_inbox", "team_of"]

log = logging.getLogger("mentra_nb.runtime")

INBOX_MARKER = "<team-inbox>"
"""The tag that opens team mail in a transcript (`<team-inbox>[…]</team-inbox>`)."""


def format_inbox(mail: list[TeamMail]) -> str:
    """Unread team mail as the one user message a round starts with."""
    # No teammate's text can close the inbox and forge mail after it.
    body = envelope_json([m.message.for_model() for m in mail])
    return f"{INBOX_MARKER}\n{body}\n</team-inbox>"


def format_plain(mail: list[TeamMail]) -> str:
    """Mail as an agent without a team reads it: what a user would have typed."""
    return "\n\n".join(m.message.content for m in mail)


def holds_inbox(message: Message) -> bool:
    """Whether `message` delivered team mail (injected, or a `team_read_inbox` result)."""
    if message.role is not Role.USER:
        return False
    for block in message.content:
        if isinstance(block, TextBlock) and INBOX_MARKER in block.text:
            return True
        if isinstance(block, ToolResultBlock) and INBOX_MARKER in block.content:
            return True
    return False


class TeamInbox(AgentExtension):
    """Attached to every lead and teammate: its inbox, its team tools, its
    snapshot fields."""

    def __init__(self, team: Team, agent: AgentHandle,
                 tools: Callable[[Team, AgentHandle], list[Tool]],
                 lead_closed: Callable[[Team], None]) -> None:
        self.team = team
        self.agent = agent
        # Given by the extension: the team tools find this inbox through their agent.
        self._tools = tools
        self._lead_closed = lead_closed

    async def aclose(self) -> None:
        if self.team.lead is self.agent:
            self._lead_closed(self.team)

    def tools(self) -> list[Tool]:
        return self._tools(self.team, self.agent)

    async def before_round(self) -> list[Message]:
        self.team.start_dormant_actors()
        # Through the runtime's StoreIO, in order with the agent's other writes:
        # every round asks, and a network store must not hold the loop meanwhile.
        # The first round also reads the team's members, which the round's tools ask for.
        team = self.team
        read_members = None if team.members_loaded else team.read_members
        mail, members = await self.agent.services.store_io.run(
            self.agent.id, lambda: (self._claim_stored(), None if read_members is None else read_members()))
        if members is not None:
            team.take_members(members)
        if not mail:
            return []
        self.team.mail_changed(self.agent.name)
        return [Message.user(format_plain(mail) if self._plain() else format_inbox(mail))]

    def _plain(self) -> bool:
        """Whether this agent reads mail as plain user text: a lead with no team."""
        return self.agent.kind == "agent" and not self.team.has_members()

    def claim(self) -> list[TeamMail]:
        """Claim this member's pending mail for the message written next in its transcript."""
        mail = self._claim_stored()
        if mail:
            self.team.mail_changed(self.agent.name)
        return mail

    def _claim_stored(self) -> list[TeamMail]:
        """The store's half of `claim` (safe on a store thread: it notifies no one)."""
        agent = self.agent
        services = agent.services
        if _mail.count_mail(services.store, self.team.id, agent.name) == 0:
            return []  # a read, so a quiet round takes no write lock
        return _mail.claim_mail(
            services.store, self.team.id, agent.name, agent_id=agent.id, transcript_seq=agent.state.history_len,
            token=services.token,
        )

    async def after_run(self, succeeded: bool) -> None:
        # Settled from the transcript rather than from `succeeded`: a run that hit
        # max_rounds failed but kept its transcript, so its mail was delivered.
        # The store's reads and writes go through StoreIO, in order with the
        # agent's other writes (off the loop for a network store); what they find
        # is acted on here, on the loop. The run is over, so the transcript is
        # loaded and no longer changes; the store thread reads a copy of it.
        agent = self.agent
        io = agent.services.store_io
        history = list(agent.state.transcript)
        if await io.run(agent.id, lambda: self._settle_stored(lambda: history)):
            self.team.mail_changed(agent.name)
        if agent.kind == "agent" and not agent.services.closed:
            # Mail posted while this run was in its last round waits for no signal.
            self.team.act_on_mail(await io.run(agent.id, self.team.mail_waiting))

    def settle(self) -> None:
        """Settle the mail this agent claimed by what its transcript holds."""
        if self._settle_stored(lambda: self.agent.state.transcript):
            self.team.mail_changed(self.agent.name)

    def _settle_stored(self, transcript: Callable[[], Sequence[Message]]) -> bool:
        """The store's half of `settle` (safe on a store thread: it notifies no one);
        whether any mail was settled. `transcript` is read only when mail is inflight."""
        agent = self.agent
        services = agent.services
        try:
            inflight = _mail.inflight_mail(services.store, agent.id)
            if not inflight:
                return False
            history = transcript()
            ack: list[int] = []
            requeue: list[int] = []
            claimed: dict[int | None, list[TeamMail]] = {}
            for mail in inflight:
                claimed.setdefault(mail.transcript_seq, []).append(mail)
            secrets = known_secrets(services.workspace_root)
            for seq, group in claimed.items():
                kept = seq is not None and seq < len(history) and _delivers(history[seq], group, secrets)
                (ack if kept else requeue).extend(mail.id for mail in group)
            _mail.settle_mail(services.store, agent.id, ack=ack, requeue=requeue, token=services.token)
        except MentraError as err:
            # Left inflight, it is settled again when the agent is next loaded.
            log.warning("could not settle the team mail of %s: %s", agent.name, err)
            return False
        return True

    def snapshot_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"pending_team_messages": self.team.unread(self.agent.name)}
        if self.agent.kind != "teammate":
            fields["teammates"] = self.team.teammates()
        return fields


def _delivers(message: Message, mail: list[TeamMail], secrets: list[str]) -> bool:
    """Whether `message` (at the position `mail` was claimed for) is that mail. The
    turn loop scrubbed it when it was written: mail stored before a secret was known
    reads differently now, and must not be delivered again for that."""
    if holds_inbox(message):
        return True
    plain = format_plain(mail)
    return message.role is Role.USER and message.text in (plain, scrub(plain, secrets))


def team_of(agent: AgentHandle) -> Team:
    """The team `agent` leads or belongs to."""
    inbox = agent.extension(TeamInbox)
    if inbox is None:
        raise AgentError(
            f"agent '{agent.name}' ({agent.kind}) cannot be in a team: only lead agents and their "
            "teammates have one, in a runtime with the TeamExtension (one of its default extensions)"
        )
    return inbox.team
