"""The team's durable rows, kept as store records (mentra_nb.store.records).

A team is named by its lead's agent id (`team_id`, the records' scope); members
are addressed by name inside it, so a teammate re-spawned under the same name
keeps its inbox.

- Mail (`teams.mail`) is a queue per recipient (the record's lane): pending →
  inflight (claimed by a run of `claimed_by`, to be written at transcript
  position `transcript_seq`) → acked. After a crash the transcript tells whether
  it kept the mail (ack) or lost it with a rolled-back run (requeue).
- Protocol requests (`teams.request`) between two members, keyed by id, whose
  record state is their status, so answering is a conditional update: two
  answers racing cannot both win.
- A teammate's own state (`teams.member`): its status and when it was spawned.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.errors import RecordConflict, StoreError
from mentra_nb.store.base import Store
from mentra_nb.store.records import CLAIMED, DONE, PENDING, Record, RecordKind

__all__ = [
    "MAIL",
    "MEMBERS",
    "REQUESTS",
    "MemberState",
    "TeamMail",
    "TeamMailState",
    "TeamMessage",
    "TeamMessageKind",
    "TeamRequest",
    "TeamRequestStatus",
    "claim_mail",
    "count_mail",
    "create_request",
    "inflight_mail",
    "list_mail",
    "list_requests",
    "queue_mail",
    "resolve_request",
    "settle_mail",
]

TeamMessageKind = Literal["message", "broadcast", "request", "response"]
"""What team mail is: a message, a broadcast, a protocol request or a response."""
TeamMailState = Literal["pending", "inflight", "acked"]
"""Where team mail is: `pending`, `inflight` (read by a run not yet committed) or `acked`."""
TeamRequestStatus = Literal["pending", "approved", "rejected"]
"""Where a protocol request stands."""


class TeamMessage(BaseModel):
    """One piece of team mail, exactly as the recipient's model reads it inside
    `<team-inbox>`: `{type, from, content, timestamp, request_id?, protocol?, approve?}`."""

    model_config = ConfigDict(defer_build=True, frozen=True, populate_by_name=True, serialize_by_alias=True)

    type: TeamMessageKind = "message"
    sender: str = Field(alias="from")
    content: str
    timestamp: int = 0  # unix seconds: what a model needs, and stable to compare
    request_id: str | None = None
    protocol: str | None = None
    approve: bool | None = None
    # The id of the runtime that left it with `rt.post` (mail from outside the team).
    posted_by_runtime: str | None = None

    def for_model(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class TeamMail(BaseModel):
    """A queued `TeamMessage`: pending → inflight (claimed by a run of `claimed_by`,
    to be written at transcript position `transcript_seq`) → acked."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: int
    team_id: str
    recipient: str
    message: TeamMessage
    state: TeamMailState = "pending"
    claimed_by: str | None = None
    transcript_seq: int | None = None


class TeamRequest(BaseModel):
    """A protocol request (`shutdown`, `plan_approval`, any name) between two members."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    team_id: str
    protocol: str
    sender: str
    recipient: str
    content: str
    status: TeamRequestStatus = "pending"
    created_at: float = 0.0
    resolved_at: float | None = None
    reason: str | None = None


class MemberState(BaseModel):
    """A teammate's team status (a `TeamMemberStatus` as JSON) and spawn time."""

    status: dict[str, Any] = Field(default_factory=dict)
    spawned_at: float | None = None


MAIL = RecordKind("teams.mail", TeamMessage)
"""The record kind of team mail: scoped by team (its lead's id), one lane per recipient."""
REQUESTS = RecordKind("teams.request", TeamRequest)
"""The record kind of a team's protocol requests (`plan_approval`, `shutdown`, …)."""
MEMBERS = RecordKind("teams.member", MemberState)
"""The record kind of a teammate's team state: its status and when it was spawned."""

# Mail's states as the records queue names them.
_MAIL_STATES: dict[str, TeamMailState] = {PENDING: "pending", CLAIMED: "inflight", DONE: "acked"}
_RECORD_STATES = {mine: theirs for theirs, mine in _MAIL_STATES.items()}


def _mail(record: Record[TeamMessage]) -> TeamMail:
    state = _MAIL_STATES.get(record.state)
    if state is None:
        raise StoreError(f"team mail {record.seq} is in an unknown state {record.state!r}")
    seq = (record.claim or {}).get("transcript_seq")
    return TeamMail(id=record.seq, team_id=record.scope, recipient=record.lane,
                    message=record.value, state=state, claimed_by=record.claimed_by,
                    transcript_seq=seq if isinstance(seq, int) else None)


def queue_mail(store: Store, team_id: str, recipient: str, message: TeamMessage) -> int:
    """Queue `message` (pending) for `recipient`; returns its id. Not fenced: a
    sender never holds the recipient's lease, and mail may arrive while no
    runtime drives the recipient."""
    return MAIL.append(store, team_id, message, lane=recipient, state=PENDING).seq


def claim_mail(store: Store, team_id: str, recipient: str, *, agent_id: str, transcript_seq: int,
               token: str) -> list[TeamMail]:
    """Move every pending message of `recipient` to inflight for `agent_id`'s
    current run, oldest first. Fenced by `agent_id`'s lease."""
    claimed = MAIL.claim(store, team_id, recipient, claimer=agent_id, token=token,
                         claim={"transcript_seq": transcript_seq})
    return [_mail(r) for r in claimed]


def count_mail(store: Store, team_id: str, recipient: str, state: TeamMailState = "pending") -> int:
    """How much of `recipient`'s mail in the team is in `state` (unread: pending)."""
    return MAIL.count(store, team_id, lane=recipient, state=_RECORD_STATES[state])


def list_mail(store: Store, team_id: str, recipient: str | None = None,
              state: TeamMailState | None = None) -> list[TeamMail]:
    """Mail of a team, oldest first, optionally narrowed to a recipient and state."""
    return [_mail(r) for r in MAIL.list(store, team_id, lane=recipient,
                                        state=None if state is None else _RECORD_STATES[state])]


def inflight_mail(store: Store, agent_id: str) -> list[TeamMail]:
    """Mail claimed by `agent_id` and neither acked nor requeued yet."""
    return [_mail(r) for r in MAIL.list(store, claimed_by=agent_id, state=CLAIMED)]


def settle_mail(store: Store, agent_id: str, *, ack: list[int], requeue: list[int], token: str) -> None:
    """Inflight mail of `agent_id`: `ack` → acked, `requeue` → pending, in one step."""
    MAIL.settle(store, agent_id, done=ack, requeue=requeue, token=token)


def create_request(store: Store, request: TeamRequest, message: TeamMessage) -> None:
    """Record a pending request and queue its `message` for the recipient, in one step."""
    if not request.created_at:
        request = request.model_copy(update={"created_at": time.time()})
    try:
        store.write_records([
            REQUESTS.put_op(request.team_id, request, request.id, state=request.status, replace=False),
            MAIL.append_op(request.team_id, message, lane=request.recipient, state=PENDING),
        ])
    except RecordConflict as err:
        raise StoreError(f"team request {request.id} already exists") from err


def resolve_request(store: Store, team_id: str, request_id: str, *, approve: bool,
                    reason: str | None, response: TeamMessage) -> TeamRequest | None:
    """Approve or reject a pending request and queue `response` for its sender,
    in one step. Returns the resolved request, or None if it was not pending."""
    found = REQUESTS.get(store, team_id, request_id)
    if found is None or found.state != "pending":
        return None
    status: TeamRequestStatus = "approved" if approve else "rejected"
    resolved = found.value.model_copy(update={"status": status, "resolved_at": time.time(),
                                              "reason": reason})
    try:
        store.write_records([
            REQUESTS.update_op(team_id, request_id, resolved, state=status, expect_state="pending"),
            MAIL.append_op(team_id, response, lane=resolved.sender, state=PENDING),
        ])
    except RecordConflict:
        return None  # answered meanwhile
    return resolved


def list_requests(store: Store, team_id: str) -> list[TeamRequest]:
    """Requests of a team, oldest first."""
    return [r.value for r in REQUESTS.list(store, team_id)]
