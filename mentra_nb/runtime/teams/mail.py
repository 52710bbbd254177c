"""The team's durable rows, kept as store records (mentra_nb.store.records).

A team is named by its lead's agent id (`team_id`, the records' scope); members
are addressed by name inside it, so a teammate re-spawned under the same name
keeps its inbox.

- Mail (`MAIL`, kind `teams.mail`) is a `Mailbox` (runtime/mail.py) with one
  queue per member name: claimed at the start of each round for the message
  written next in the member's transcript, settled from that transcript when
  the run ends or after a crash (`_inbox.py` renders and recognises it).
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
from mentra_nb.runtime.mail import Mailbox
from mentra_nb.store.base import Store
from mentra_nb.store.records import RecordKind

__all__ = [
    "MAIL",
    "MEMBERS",
    "REQUESTS",
    "MemberState",
    "TeamMessage",
    "TeamMessageKind",
    "TeamRequest",
    "TeamRequestStatus",
    "create_request",
    "list_requests",
    "resolve_request",
]

TeamMessageKind = Literal["message", "broadcast", "request", "response"]
"""What team mail is: a message, a broadcast, a protocol request or a response."""
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


MAIL = Mailbox("teams.mail", TeamMessage)
"""Team mail: scoped by team (its lead's id), one queue per member name."""
REQUESTS = RecordKind("teams.request", TeamRequest)
"""The record kind of a team's protocol requests (`plan_approval`, `shutdown`, …)."""
MEMBERS = RecordKind("teams.member", MemberState)
"""The record kind of a teammate's team state: its status and when it was spawned."""

def create_request(store: Store, request: TeamRequest, message: TeamMessage) -> None:
    """Record a pending request and queue its `message` for the recipient, in one step."""
    if not request.created_at:
        request = request.model_copy(update={"created_at": time.time()})
    try:
        store.write_records([
            REQUESTS.put_op(request.team_id, request, request.id, state=request.status, replace=False),
            MAIL.queue_op(request.team_id, request.recipient, message),
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
            MAIL.queue_op(team_id, resolved.sender, response),
        ])
    except RecordConflict:
        return None  # answered meanwhile
    return resolved


def list_requests(store: Store, team_id: str) -> list[TeamRequest]:
    """Requests of a team, oldest first."""
    return [r.value for r in REQUESTS.list(store, team_id)]
