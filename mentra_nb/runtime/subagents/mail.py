"""A subagent tree's mail, kept as store records (mentra_nb.store.records) like team
mail (runtime/teams/mail.py): one queue per recipient, no cap.

`subagents.mail` records are scoped by the tree's root agent id; the lane is the
recipient's path (`/root`, `/root/research`, …) and the key is the mail's id,
the marker its delivery carries (runtime/subagents/_mailbox.py). A record moves
pending → claimed (by the recipient agent's run, which delivers it) → done, or
back to pending:

- a run claims its pending mail at the start of each round (fenced by its lease)
  and delivers each item as one message holding the item's marker;
- when the run ends, and whenever the agent is loaded after a crash, the
  recipient's transcript decides: mail whose marker it holds was delivered (done),
  mail whose marker a rollback removed goes back to pending. So a crash can
  neither lose mail nor deliver it twice into one durable transcript.

Mail that changes the tree (a child's finish notice) is written in the same
transaction as the tree (`queue_op`), so the two never disagree on disk.
"""

from __future__ import annotations

from collections.abc import Iterable

from mentra_nb.messages import Message
from mentra_nb.runtime.subagents._mailbox import mail_markers
from mentra_nb.runtime.subagents._tree import Mail
from mentra_nb.store.base import Store
from mentra_nb.store.records import CLAIMED, PENDING, Delete, Put, Record, RecordKind

__all__ = [
    "MAIL",
    "claim_mail",
    "delete_op",
    "inflight_mail",
    "pending_mail",
    "queue_mail",
    "queue_op",
    "settle_mail",
]

MAIL = RecordKind("subagents.mail", Mail)
"""The record kind of subagent mail: scoped by the tree's root id, one lane per recipient path."""


def queue_op(root_id: str, mail: Mail) -> Put:
    """The write that queues `mail` (pending) for `mail.recipient`, for a batch."""
    return MAIL.put_op(root_id, mail, mail.id, lane=mail.recipient, state=PENDING, replace=False)


def delete_op(root_id: str, mail_id: str) -> Delete:
    """The write that forgets the mail `mail_id` (an approval notice no longer true)."""
    return Delete(kind=MAIL.name, scope=root_id, key=mail_id)


def queue_mail(store: Store, root_id: str, mail: Mail) -> Record[Mail]:
    """Queue `mail` on its own (mail from outside the tree: `rt.post`). Not fenced:
    the poster holds no lease of the tree."""
    [stored] = store.write_records([queue_op(root_id, mail)])
    return MAIL.record(stored)


def pending_mail(store: Store, root_id: str, recipient: str | None = None) -> list[Mail]:
    """Mail of the tree waiting to be read (by `recipient`), oldest first."""
    return [r.value for r in MAIL.list(store, root_id, lane=recipient, state=PENDING)]


def claim_mail(store: Store, root_id: str, recipient: str, transcript: Iterable[Message], *,
               agent_id: str, token: str) -> list[Mail]:
    """Claim every pending item of `recipient` for the run of `agent_id` (the
    recipient agent, fenced by its lease), oldest first. Items `transcript`
    already holds (mail stored before this design, read but not yet removed) are
    settled as delivered and not returned, so they are never delivered twice."""
    if MAIL.count(store, root_id, lane=recipient, state=PENDING) == 0:
        return []  # a read, so a quiet round takes no write lock
    claimed = MAIL.claim(store, root_id, recipient, claimer=agent_id, token=token)
    durable = mail_markers(transcript)
    held = [r.seq for r in claimed if r.key in durable]
    if held:
        MAIL.settle(store, agent_id, done=held, token=token)
    return [r.value for r in claimed if r.key not in durable]


def inflight_mail(store: Store, agent_id: str) -> list[Record[Mail]]:
    """Mail claimed by `agent_id`'s runs and not settled yet."""
    return MAIL.list(store, claimed_by=agent_id, state=CLAIMED)


def settle_mail(store: Store, agent_id: str, transcript: Iterable[Message], *, token: str) -> int:
    """Settle the mail `agent_id` claimed: done when `transcript` (what the store
    keeps) holds its marker, pending again otherwise. Returns how many went back."""
    inflight = inflight_mail(store, agent_id)
    if not inflight:
        return 0
    durable = mail_markers(transcript)
    done = [r.seq for r in inflight if r.key in durable]
    requeue = [r.seq for r in inflight if r.key not in durable]
    MAIL.settle(store, agent_id, done=done, requeue=requeue, token=token)
    return len(requeue)
