"""Teams: a lead agent and the persistent teammates it spawned.

    alice = await lead.spawn_teammate("alice", "researcher", "Find three sources on X")
    lead.send_team_message("alice", "Also check Y")
    lead.approve_request(request_id)          # e.g. alice's plan_approval

A team is named by its lead's id. Teammates are full persisted agents (kind
"teammate", parent = the lead) driven by a `TeammateActor` on the runtime's
loop; members talk through durable mail in the store (`_inbox.py`) and
protocol requests (`shutdown`, `plan_approval` or any name) that the
addressee approves or rejects. A teammate's status (idle / working /
failed{error} / shutdown) is a `teams.member` record (`mail.py`).

`TeamExtension` (`_extension.py`) is one of the runtime's default extensions.
After every resume path it revives each resumed lead's teammates that did not
shut down and wakes them for the mail that arrived while no process ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mentra_nb.errors import (
    AgentError,
    AgentExists,
    AgentNotFound,
    ConfigError,
    LeaseUnavailable,
    MentraError,
)
from mentra_nb.providers.base import ModelInfo
from mentra_nb.runtime._config import AgentConfig
from mentra_nb.runtime._recovery import INTERRUPTED_TOOL_RESULT
from mentra_nb.runtime._redaction import known_secrets, scrub
from mentra_nb.runtime._services import AgentHandle, Services
from mentra_nb.runtime._tracing import note_mail_to
from mentra_nb.runtime.teams import mail as _mail
from mentra_nb.runtime.teams._actor import TeammateActor
from mentra_nb.runtime.teams._config import TeamConfig
from mentra_nb.runtime.teams._snapshot import TeammateInfo, TeamMemberStatus
from mentra_nb.runtime.teams.mail import (
    MEMBERS,
    MemberState,
    TeamMail,
    TeamMessage,
    TeamRequest,
    TeamRequestStatus,
)
from mentra_nb.store.base import LeaseRecord, Store

__all__ = [
    "LEAD_ONLY_TOOLS",
    "TEAMMATE_TOOL_NAMES",
    "Direction",
    "Team",
    "WaitingMail",
    "post_mail",
    "teammate_system_prompt",
]

log = logging.getLogger("mentra_nb.runtime")

LEAD_ONLY_TOOLS = ("team_spawn", "team_broadcast")
"""The team tools only a lead is offered."""
TEAMMATE_TOOL_NAMES = (
    "team_send", "team_read_inbox", "team_request", "team_respond", "team_list_requests", "idle",
)

Direction = Literal["inbound", "outbound", "any"]

# After a silent host's lease runs out by the store's clock: a little later by ours,
# so the retry does not land a hair early (it would only be refused and rescheduled).
_LEASE_EXPIRY_MARGIN = 0.05


def teammate_system_prompt(name: str, role: str, lead: str, lead_system: str | None) -> str:
    """A teammate's system prompt: its name, role and lead, then the lead's own instructions."""
    prompt = (
        f"You are {name}, the {role} of a team led by {lead}. You work on your own and reach "
        "the team only through the team tools.\n"
        "- Team mail reaches you as a user message <team-inbox>[...]</team-inbox>: a JSON array "
        "of {type, from, content, timestamp, request_id?, protocol?, approve?}. Mail that "
        "arrives while you work comes the same way; team_read_inbox fetches it at once.\n"
        f"- team_send {{to, content}} writes to one member; report your results to {lead} "
        "this way, because nobody reads your replies otherwise.\n"
        "- Before risky or irreversible work, submit your plan with team_request "
        f'{{to: "{lead}", protocol: "plan_approval", content: <the plan>}} and wait for the '
        "response (approve true or false, with a reason). If it is rejected, revise the plan "
        "along the reason and keep working.\n"
        '- When you receive a "shutdown" request, finish or hand over what you are doing, then '
        "answer it with team_respond {request_id, approve: true}; you stop after that turn. "
        "Reject it with a reason if you must finish something first.\n"
        "- team_list_requests shows open requests. When you have nothing left to do, call "
        "idle: you are woken when new mail arrives."
    )
    if lead_system:
        prompt += f"\n\nThe lead's own instructions, for context:\n{lead_system}"
    return prompt


@dataclass(frozen=True)
class WaitingMail:
    """What `Team.mail_waiting` read: unread counts of the live teammates by name,
    and the lead's pending mail (None: no lead to run here)."""

    unread: dict[str, int]
    lead_pending: list[TeamMail] | None


@dataclass
class _Member:
    agent_id: str
    name: str
    role: str
    model: str
    status: TeamMemberStatus
    spawned_at: float


class Team:
    """One lead's team in one runtime. Get it with `team_of(agent)`."""

    def __init__(self, services: Services, team_id: str) -> None:
        self.services = services
        self.id = team_id
        self.lead: AgentHandle | None = None
        self._members: dict[str, _Member] | None = None
        self._actors: dict[str, TeammateActor] = {}
        self._unread: dict[str, int] = {}
        self._shutdowns: set[str] = set()
        # Teammates waiting for a silent host's lease, resumed while no loop ran.
        self._awaiting_lease: dict[str, LeaseRecord] = {}
        self._lead_name: str | None = None
        self._lead_run: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<Team of {self.lead_name}: {', '.join(self.members) or 'no teammates'}>"

    # --- who is in it ------------------------------------------------------------

    @property
    def store(self) -> Store:
        return self.services.store

    @property
    def lead_name(self) -> str:
        if self.lead is not None:
            return self.lead.name
        if self._lead_name is None:
            persisted = self.store.load_agent(self.id)
            self._lead_name = persisted.record.name if persisted is not None else "lead"
        return self._lead_name

    @property
    def members(self) -> dict[str, _Member]:
        """Teammates by name (the lead is not one of them), loaded once from the store."""
        if self._members is None:
            self._members = self.read_members()
        return self._members

    @property
    def members_loaded(self) -> bool:
        """Whether `members` was read (it is read once)."""
        return self._members is not None

    def read_members(self) -> dict[str, _Member]:
        """The teammates as the store holds them (safe on a store thread: it changes
        nothing); `members` is these, read once."""
        members: dict[str, _Member] = {}
        # Only this lead's children: reading every agent here made resuming
        # N leads read N² rows (each lead's first snapshot asks for members).
        for record in self.store.list_agents(parent_id=self.id):
            if record.kind != "teammate":
                continue
            stored = MEMBERS.get(self.store, record.id)
            state = stored.value if stored is not None else MemberState()
            status = TeamMemberStatus.model_validate(state.status or {"name": "idle"})
            # Creation order, so if a name ever had two rows the newest wins.
            members[record.name] = _Member(
                agent_id=record.id, name=record.name, role=record.role or "",
                model=record.model, status=status,
                spawned_at=float(state.spawned_at or record.created_at),
            )
        return members

    def take_members(self, members: dict[str, _Member]) -> None:
        """`read_members`' result, read off the loop, unless `members` was loaded meanwhile."""
        if self._members is None:
            self._members = members

    def has_members(self) -> bool:
        return bool(self.members)

    def live_agent(self, name: str) -> AgentHandle | None:
        if name == self.lead_name:
            return self.lead
        member = self.members.get(name)
        return self.services.live_agent(member.agent_id) if member is not None else None

    def teammates(self) -> list[TeammateInfo]:
        return [
            TeammateInfo(
                name=m.name, agent_id=m.agent_id, role=m.role, model=m.model, status=m.status,
                alive=(actor := self._actors.get(m.name)) is not None and actor.alive,
                unread=self.unread(m.name),
            )
            for m in self.members.values()
        ]

    def status_of(self, name: str) -> TeamMemberStatus:
        return self.members[name].status

    # --- status ------------------------------------------------------------------

    def set_status(self, name: str, status: TeamMemberStatus) -> None:
        member = self.members[name]
        if member.status == status:
            return
        member.status = status
        self._save_member(member)
        self._notify(self.lead_name)

    def _save_member(self, member: _Member) -> None:
        try:
            MEMBERS.put(self.store, member.agent_id,
                        MemberState(status=member.status.model_dump(mode="json"),
                                    spawned_at=member.spawned_at),
                        agent_id=member.agent_id, token=self.services.token)
        except MentraError as err:
            log.warning("could not save the team status of %s: %s", member.name, err)

    def take_shutdown(self, name: str) -> bool:
        if name in self._shutdowns:
            self._shutdowns.discard(name)
            return True
        return False

    def actor_stopped(self, name: str) -> None:
        self._notify(self.lead_name)

    # --- mail counts and observers -----------------------------------------------

    def unread(self, name: str, *, refresh: bool = False) -> int:
        if refresh or name not in self._unread:
            try:
                self._unread[name] = _mail.count_mail(self.store, self.id, name)
            except MentraError:
                return self._unread.get(name, 0)
        return self._unread[name]

    def mail_changed(self, name: str) -> None:
        self.unread(name, refresh=True)
        self._unread_shown(name)

    def _unread_shown(self, name: str) -> None:
        """`name`'s unread count changed: its snapshot and its lead's show it."""
        self._notify(name)
        if name != self.lead_name:
            self._notify(self.lead_name)  # the lead's snapshot shows each teammate's unread

    def _notify(self, name: str) -> None:
        agent = self.live_agent(name)
        if agent is not None:
            agent.state.changed()

    # --- spawning ------------------------------------------------------------------

    async def spawn(
        self, name: str, role: str, prompt: str | None = None, *,
        model: str | ModelInfo | None = None, max_rounds: int | None = None,
    ) -> AgentHandle:
        lead = self.lead
        if lead is None:
            raise AgentError(
                "the lead of this team is not live in this runtime; resume it (rt.resume()) first"
            )
        name = name.strip() if isinstance(name, str) else ""
        role = role.strip() if isinstance(role, str) else ""
        if not name:
            raise ConfigError("a teammate needs a name, e.g. lead.spawn_teammate('alice', 'researcher')")
        if not role:
            raise ConfigError(
                f"teammate '{name}' needs a role saying what it does, e.g. 'researcher' or 'reviewer'"
            )
        if name == lead.name:
            raise ConfigError(
                f"'{name}' is the lead's own name; give the teammate another name"
            )
        existing = self.members.get(name)
        if existing is not None and existing.status.name != "shutdown":
            raise AgentExists(
                f"teammate '{name}' is already alive in {lead.name}'s team (status "
                f"{existing.status}); send it work with lead.send_team_message('{name}', ...) "
                "or pick another name"
            )
        config = _teammate_config(lead, name, role, max_rounds)
        if existing is not None:
            # A shut-down name comes back as the same agent (history kept), so the
            # store never holds two teammates with one name for a later resume.
            agent = self.live_agent(name) or self.services.load_agent(existing.agent_id)
            agent.update_profile(role=role, config=config)
            existing.role = role
            member = existing
        else:
            agent = self.services.create_agent(
                name, model or lead.model, config, kind="teammate", parent_id=lead.id, role=role
            )
            member = _Member(
                agent_id=agent.id, name=name, role=role, model=agent.model.key,
                status=TeamMemberStatus.idle(), spawned_at=0.0,
            )
            self.members[name] = member
        member.spawned_at = time.time()
        member.status = TeamMemberStatus.idle()
        self._save_member(member)
        self._shutdowns.discard(name)
        self._start_actor(agent)
        if prompt is not None and prompt.strip():
            self.send(lead.name, name, prompt)
        self._notify(lead.name)
        return agent

    def _start_actor(self, agent: AgentHandle, *, continue_first: bool = False) -> TeammateActor:
        actor = self._actors.get(agent.name)
        if actor is None or (actor.started and not actor.alive):
            actor = TeammateActor(self, agent, continue_first=continue_first)
            self._actors[agent.name] = actor
        actor.start()
        actor.wake()  # its first cycle picks up whatever mail is already waiting
        return actor

    def start_dormant_actors(self) -> None:
        """Start actors created while no event loop ran (a `rt.resume()` from sync code),
        and retry the teammates that waited for a silent host's lease meanwhile."""
        for actor in self._actors.values():
            if not actor.started:
                actor.start()
        awaiting, self._awaiting_lease = self._awaiting_lease, {}
        for name, holder in awaiting.items():
            member = self.members.get(name)
            if member is not None:
                self._revive_member(member, holder)

    # --- revival -------------------------------------------------------------------

    def revive(self) -> None:
        """Load every teammate that did not shut down and wake it for waiting mail."""
        for member in list(self.members.values()):
            self._revive_member(member)

    def _revive_member(self, member: _Member, refused_by: LeaseRecord | None = None) -> None:
        if member.status.name == "shutdown" or self.services.closed or self.members.get(member.name) is not member:
            return
        agent = self.live_agent(member.name)
        if agent is None:
            try:
                agent = self.services.load_agent(member.agent_id)
            except LeaseUnavailable as err:
                self._revive_when_lease_expires(member, err, refused_by)
                return
            except MentraError as err:
                log.warning("teammate %s of %s was not revived: %s", member.name, self.lead_name, err)
                return
        if self._approved_shutdown_since(member):
            self._shutdowns.add(member.name)  # approved just before the process died
        actor = self._actors.get(member.name)
        if actor is not None and actor.alive:
            actor.wake()
            return
        self._start_actor(agent, continue_first=_interrupted_in_a_tool(agent))
        if refused_by is not None:
            self._notify(self.lead_name)  # revived after the lead's views were drawn

    def _revive_when_lease_expires(self, member: _Member, err: LeaseUnavailable,
                                   refused_by: LeaseRecord | None) -> None:
        """A dead host's leases do not all run out together: one taken after its
        last heartbeat outlives the lead's by up to a heartbeat interval. While the
        holder stays silent (its heartbeat unchanged since the last refusal), come
        back when its lease runs out; a holder that heartbeats drives the teammate."""
        holder = err.holder
        silent = err.expires_in is not None and (
            refused_by is None or holder.heartbeat_at == refused_by.heartbeat_at)
        if not silent:
            log.warning("teammate %s of %s was not revived: %s", member.name, self.lead_name, err)
            return
        log.info("teammate %s of %s is revived in %.1f s, when the lease of a silent host runs out: %s",
                 member.name, self.lead_name, err.expires_in, err)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # resumed from sync code: retried when the loop starts the actors
            self._awaiting_lease[member.name] = holder
            return
        loop.call_later((err.expires_in or 0.0) + _LEASE_EXPIRY_MARGIN, self._revive_member, member, holder)

    def _approved_shutdown_since(self, member: _Member) -> bool:
        return any(
            r.protocol == "shutdown" and r.status == "approved" and r.recipient == member.name
            and (r.resolved_at or 0) >= member.spawned_at
            for r in _mail.list_requests(self.store, self.id)
        )

    # --- mail --------------------------------------------------------------------------

    def _recipient(self, sender: str, to: str) -> str:
        to = to.strip() if isinstance(to, str) else ""
        everyone = ", ".join([self.lead_name, *self.members]) or self.lead_name
        if not to:
            raise ConfigError(f"team mail needs a recipient; the members are: {everyone}")
        if to == sender:
            raise ConfigError(f"'{sender}' cannot send team mail to itself; the members are: {everyone}")
        if to == self.lead_name:
            return to
        member = self.members.get(to)
        if member is None:
            raise AgentNotFound(
                f"unknown team member '{to}'; the members of {self.lead_name}'s team are: {everyone}"
            )
        if member.status.name == "shutdown":
            raise AgentError(
                f"teammate '{to}' has shut down and reads no mail; the lead can spawn it again "
                f"with spawn_teammate('{to}', role)"
            )
        return to

    def _check_sender(self, sender: str) -> None:
        if sender != self.lead_name and sender not in self.members:
            raise AgentNotFound(f"'{sender}' is not a member of {self.lead_name}'s team")

    def _delivered(self, name: str) -> None:
        # The recipient's next run is traced as a child of the run that mailed it.
        member = self.members.get(name)  # the lead is no member; a team's id is its lead's
        note_mail_to(member.agent_id if member is not None else self.id)
        self.mail_changed(name)
        actor = self._actors.get(name)
        if actor is not None:
            actor.start()  # no-op once started; starts one revived outside an event loop
            actor.wake()

    def check_mail(self) -> None:
        """Mail may have arrived from another process or host: wake each teammate
        with unread mail, and run the lead for mail from outside the team (a
        `rt.post`); mail among the team reaches the lead at its next round, as ever."""
        self.act_on_mail(self.mail_waiting())

    def mail_waiting(self) -> WaitingMail:
        """The store's half of `check_mail` (safe on a store thread: it changes and
        notifies nothing)."""
        unread: dict[str, int] = {}
        for name, actor in list(self._actors.items()):
            # A shut-down teammate (its actor ended) is not woken: as on a resume.
            if actor.alive:
                try:
                    unread[name] = _mail.count_mail(self.store, self.id, name)
                except MentraError:
                    unread[name] = self._unread.get(name, 0)  # as `unread` answers then
        lead = self.lead
        if lead is None or lead.services.closed:
            return WaitingMail(unread, None)
        return WaitingMail(unread, _mail.list_mail(self.store, self.id, self.lead_name, "pending"))

    def act_on_mail(self, waiting: WaitingMail) -> None:
        """`check_mail`'s half on the loop: wake and notify for what `mail_waiting` found."""
        for name, count in waiting.unread.items():
            actor = self._actors.get(name)
            self._unread[name] = count
            if count and actor is not None and actor.alive:
                self._unread_shown(name)
                actor.wake()
        lead, pending = self.lead, waiting.lead_pending
        if not pending or lead is None or lead.services.closed:
            return  # the usual case: one indexed read, no member list loaded
        insiders = {self.lead_name, *self.members}
        if all(m.message.sender in insiders for m in pending):
            return
        self._unread[self.lead_name] = len(pending)
        self._unread_shown(self.lead_name)
        if self._lead_run is None or self._lead_run.done():
            self._lead_run = asyncio.get_running_loop().create_task(
                self._run_lead_for_mail(lead), name=f"mentra-mail-{lead.name}")

    async def _run_lead_for_mail(self, lead: AgentHandle) -> None:
        """Runs of the lead while mail waits; each run opens with the mail as its
        first message. A run already in progress takes the mail at its next round."""
        while not lead.services.closed and self.unread(self.lead_name, refresh=True):
            if lead.is_running:
                return
            try:
                await lead.start_run()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # its status says failed; the mail was requeued
                log.warning("the run of %s for its mail failed: %s", lead.name, err)
                return

    def _scrub(self, content: str) -> str:
        # The user's lead.send_team_message(...) may quote a key; mail is stored.
        return scrub(content, known_secrets(self.services.workspace_root))

    def send(self, sender: str, to: str, content: str) -> None:
        self._check_sender(sender)
        to = self._recipient(sender, to)
        _require_content(content)
        _mail.queue_mail(self.store, self.id, to, _message("message", sender, self._scrub(content)))
        self._delivered(to)

    def broadcast(self, sender: str, content: str) -> list[str]:
        """Mail every other member that did not shut down; returns their names."""
        self._check_sender(sender)
        _require_content(content)
        content = self._scrub(content)
        recipients = [
            name for name in [self.lead_name, *self.members]
            if name != sender and (name == self.lead_name or self.members[name].status.name != "shutdown")
        ]
        for name in recipients:
            _mail.queue_mail(self.store, self.id, name, _message("broadcast", sender, content))
        for name in recipients:
            self._delivered(name)
        return recipients

    # --- protocol requests -------------------------------------------------------------

    def request(self, sender: str, to: str, protocol: str, content: str) -> TeamRequest:
        self._check_sender(sender)
        to = self._recipient(sender, to)
        protocol = protocol.strip() if isinstance(protocol, str) else ""
        if not protocol:
            raise ConfigError(
                "a team request needs a protocol name, e.g. 'plan_approval' or 'shutdown'"
            )
        content = self._scrub(content)
        request = TeamRequest(
            id=f"req-{uuid.uuid4().hex[:12]}", team_id=self.id, protocol=protocol,
            sender=sender, recipient=to, content=content, created_at=time.time(),
        )
        message = TeamMessage(
            type="request", sender=sender, content=content, timestamp=int(request.created_at),
            request_id=request.id, protocol=protocol,
        )
        _mail.create_request(self.store, request, message)
        self._delivered(to)
        return request

    def respond(self, responder: str, request_id: str, approve: bool, reason: str | None = None) -> TeamRequest:
        request = self._request(request_id)
        if request.recipient != responder:
            raise AgentError(
                f"only the addressee '{request.recipient}' may answer request {request_id} "
                f"({request.protocol} from {request.sender}), not '{responder}'"
            )
        if request.status != "pending":
            raise AgentError(
                f"request {request_id} ({request.protocol} from {request.sender}) was already "
                f"{request.status}; only pending requests can be answered (pending ones: "
                "lead.team_requests('pending') in Python, %mentra team LEAD in a notebook, the "
                "team_list_requests tool for a model)"
            )
        reason = self._scrub(reason.strip()) if isinstance(reason, str) and reason.strip() else None
        response = TeamMessage(
            type="response", sender=responder, content=reason or "", timestamp=int(time.time()),
            request_id=request.id, protocol=request.protocol, approve=approve,
        )
        resolved = _mail.resolve_request(
            self.store, self.id, request_id, approve=approve, reason=reason, response=response
        )
        if resolved is None:
            raise AgentError(f"request {request_id} was answered meanwhile; only pending requests can be answered")
        if approve and resolved.protocol == "shutdown" and responder in self.members:
            self._shutdowns.add(responder)  # honoured when its current wake cycle ends
        self._delivered(resolved.sender)
        self._notify(self.lead_name)
        return resolved

    def _request(self, request_id: str) -> TeamRequest:
        for request in _mail.list_requests(self.store, self.id):
            if request.id == request_id:
                return request
        raise AgentNotFound(
            f"no team request '{request_id}' in {self.lead_name}'s team; team_list_requests "
            "(or lead.team_requests()) lists them"
        )

    def list_requests(
        self, member: str, *, status: TeamRequestStatus | None = None, protocol: str | None = None,
        counterparty: str | None = None, direction: Direction = "any",
    ) -> list[TeamRequest]:
        """Requests `member` sent or received, narrowed by the filters."""
        found = []
        for r in _mail.list_requests(self.store, self.id):
            if direction == "inbound" and r.recipient != member:
                continue
            if direction == "outbound" and r.sender != member:
                continue
            if direction == "any" and member not in (r.sender, r.recipient):
                continue
            if status is not None and r.status != status:
                continue
            if protocol is not None and r.protocol != protocol:
                continue
            if counterparty is not None and counterparty not in (r.sender, r.recipient):
                continue
            found.append(r)
        return found

    # --- lifecycle -----------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """Nothing of the team runs here: no teammate actor (alive or ended), none
        waiting for a lease, no run of the lead for mail."""
        return not self._actors and not self._awaiting_lease and (self._lead_run is None or self._lead_run.done())

    async def aclose(self) -> None:
        for actor in list(self._actors.values()):
            await actor.aclose()
        if self._lead_run is not None and not self._lead_run.done():
            self._lead_run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._lead_run


def _teammate_config(lead: AgentHandle, name: str, role: str, max_rounds: int | None) -> AgentConfig:
    config = lead.config
    hidden = [*config.hidden_tools, *(t for t in LEAD_ONLY_TOOLS if t not in config.hidden_tools)]
    allowed = None if config.tools is None else [
        *config.tools, *(t for t in TEAMMATE_TOOL_NAMES if t not in config.tools)
    ]
    # The constructor, not model_validate: a bad max_rounds is a ConfigError saying what is allowed.
    return type(config)(**{
        **config.model_dump(mode="json"),
        "system": teammate_system_prompt(name, role, lead.name, config.system),
        "tools": allowed,
        "hidden_tools": hidden,
        "max_rounds": max_rounds if max_rounds is not None else TeamConfig.of(config).teammate_max_rounds,
        "team": False,  # a teammate never leads a team of its own
    })


MAX_SENDER_CHARS = 64


def post_mail(store: Store, team_id: str, recipient: str, sender: str, content: str, *,
              runtime_id: str | None = None, workspace: Path | None = None) -> int:
    """Queue mail for `recipient` of team `team_id` from outside the team (another
    process, host or the user: `rt.post`); the process driving the recipient wakes
    for it. `sender` may be any name except a member's (the lead's or a teammate's:
    members send as themselves with team_send); `runtime_id`, the poster's, goes
    with the mail as `posted_by_runtime`. The content is scrubbed of known secrets."""
    _require_content(content)
    _check_outside_sender(store, team_id, sender)
    message = TeamMessage(type="message", sender=sender, timestamp=int(time.time()),
                          content=scrub(content, known_secrets(workspace)), posted_by_runtime=runtime_id)
    return _mail.queue_mail(store, team_id, recipient, message)


def _check_outside_sender(store: Store, team_id: str, sender: str) -> None:
    """Refuse a sender name that is empty, unreadable, or a member's of team `team_id`."""
    if not isinstance(sender, str) or not sender.strip() or len(sender) > MAX_SENDER_CHARS or any(
            unicodedata.category(c)[0] in "CZ" and c != " " for c in sender):
        raise ConfigError(f"the sender {sender!r} is not a usable name: 1-{MAX_SENDER_CHARS} printable "
                          "characters, e.g. sender='user' or sender='nightly-job'")
    lead = store.load_agent(team_id, transcript=False)
    if lead is None:
        return  # no such team: the store refuses the mail with its own error
    members = [lead.record.name, *(r.name for r in store.list_agents(lead.record.runtime_id)
                                   if r.kind == "teammate" and r.parent_id == team_id)]
    if sender in members:
        raise AgentError(
            f"rt.post cannot send as '{sender}': it is a member of {lead.record.name}'s team, and "
            "members send mail as themselves (team_send). Post under a name of your own, e.g. "
            "sender='user' (the default) or sender='nightly-job'; the mail also names the runtime "
            "that posted it"
        )


def _message(kind: Literal["message", "broadcast"], sender: str, content: str) -> TeamMessage:
    return TeamMessage(type=kind, sender=sender, content=content, timestamp=int(time.time()))


def _require_content(content: str) -> None:
    if not isinstance(content, str) or not content.strip():
        raise ConfigError("team mail needs some content; say what the recipient should know or do")


def _interrupted_in_a_tool(agent: AgentHandle) -> bool:
    """Crash recovery answered a tool call of this agent with the interrupted error."""
    last = agent.last_message
    return (
        agent.status.name == "interrupted" and last is not None
        and any(r.content == INTERRUPTED_TOOL_RESULT for r in last.tool_results)
    )
