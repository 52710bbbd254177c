"""`Mailbox`: durable mail between agents, one design for every extension that has some.

An extension declares its mail once, with the pydantic model of one item:

    NOTES = Mailbox("reviews.mail", ReviewNote)

Mail is kept as store records (`mentra_nb.store.records`) of that kind:
`scope` is whose mailbox it is (a group of agents: the id of the agent that
leads them), each recipient has its own queue in it (the record's lane: a name,
a path — whatever the extension addresses its agents by), and each letter moves

    pending ──claim──▶ claimed ──settle──▶ done
       ▲                  │
       └──── settle ──────┘  (its run was rolled back)

- `queue` / `queue_op` leaves a letter (pending). It is not fenced: a sender
  holds no lease of the recipient, and mail may arrive while nobody drives it.
  Nothing caps a queue; every letter is a row of its own.
- `claim` moves a recipient's pending letters, oldest first, to claimed for the
  run of the agent that reads them (fenced by that agent's lease), noting the
  transcript position their delivery is written at. The extension then renders
  them into messages of that run, which the turn loop commits with the run and
  rolls back with it.
- `settle`, when the run ends and whenever the agent is loaded after a crash,
  asks the extension which of the claimed letters the agent's durable
  transcript holds (`delivered`): those are done, the others go back to
  pending for the next run. So a crash can neither lose a letter nor deliver
  it twice into one transcript, and settling twice changes nothing.

The extension keeps only what is its own: the item model, how it addresses
recipients, how letters are rendered into a message and recognised in a
transcript. The methods take the store first, as the record kinds' do.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from pydantic import BaseModel

from mentra_nb.errors import StoreError
from mentra_nb.store.records import (
    CLAIMED,
    DONE,
    PENDING,
    Delete,
    Put,
    Record,
    RecordKind,
    RecordStore,
)

__all__ = ["Delivered", "Letter", "LetterState", "Mailbox", "Settled"]

M = TypeVar("M", bound=BaseModel)

LetterState = Literal["pending", "claimed", "done"]
"""Where a letter is: waiting, claimed by a run not settled yet, or delivered."""

# What the claim notes on each letter: where in the reader's transcript its delivery goes.
_POSITION = "transcript_seq"


@dataclass(frozen=True)
class Letter(Generic[M]):
    """One queued item (`message`) and where it stands."""

    id: int  # the store's number for it: increasing, so ids sort oldest first
    scope: str
    recipient: str
    key: str  # its name in the scope: the extension's own id for it, or a random one
    message: M
    state: LetterState = "pending"
    claimed_by: str | None = None
    # The transcript position of the run that claimed it (None when it was claimed
    # without one, or is not claimed).
    transcript_seq: int | None = None


Delivered = Callable[[Sequence[Letter[M]]], Collection[int]]
"""Given claimed letters, the ids of those the reader's durable transcript holds."""


class Settled(NamedTuple):
    """What a `settle` did: how many letters were delivered, how many went back."""

    done: int
    requeued: int


_STATES: dict[str, LetterState] = {PENDING: "pending", CLAIMED: "claimed", DONE: "done"}


class Mailbox(Generic[M]):
    """An extension's durable mail: items of `model`, records of kind `name` (dotted,
    starting with the extension's name). See the module for the life of a letter."""

    def __init__(self, name: str, model: type[M]) -> None:
        self.kind = RecordKind(name, model)

    def __repr__(self) -> str:
        return f"Mailbox({self.kind.name!r}, {self.kind.model.__name__})"

    def letter(self, record: Record[M]) -> Letter[M]:
        """`record` (of this mailbox's kind) as a letter."""
        state = _STATES.get(record.state)
        if state is None:
            raise StoreError(f"{self.kind.name} letter {record.seq} is in an unknown state {record.state!r}")
        position = (record.claim or {}).get(_POSITION)
        return Letter(id=record.seq, scope=record.scope, recipient=record.lane, key=record.key,
                      message=record.value, state=state, claimed_by=record.claimed_by,
                      transcript_seq=position if isinstance(position, int) else None)

    # --- leaving mail -------------------------------------------------------------------

    def queue_op(self, scope: str, recipient: str, message: M, key: str | None = None) -> Put:
        """The write that queues `message` for `recipient`, for a `write_records` list
        (so mail goes out in the transaction of the change that sends it). `key`
        names it in the scope (taken: the whole list is refused); None: a fresh one."""
        if key is None:
            return self.kind.append_op(scope, message, lane=recipient, state=PENDING)
        return self.kind.put_op(scope, message, key, lane=recipient, state=PENDING, replace=False)

    def withdraw_op(self, scope: str, key: str) -> Delete:
        """The write that forgets the letter `key` (news that is no longer true)."""
        return Delete(kind=self.kind.name, scope=scope, key=key)

    def queue(self, store: RecordStore, scope: str, recipient: str, message: M,
              key: str | None = None) -> Letter[M]:
        """Queue `message` for `recipient` on its own (see `queue_op`)."""
        [stored] = store.write_records([self.queue_op(scope, recipient, message, key)])
        return self.letter(self.kind.record(stored))

    # --- reading it ------------------------------------------------------------------------

    def list(self, store: RecordStore, scope: str | None = None, recipient: str | None = None,
             state: LetterState | None = None, *, claimed_by: str | None = None) -> builtins.list[Letter[M]]:
        """Letters, oldest first, narrowed by what is given."""
        return [self.letter(r) for r in self.kind.list(store, scope, lane=recipient, state=state,
                                                       claimed_by=claimed_by)]

    def pending(self, store: RecordStore, scope: str, recipient: str | None = None) -> builtins.list[M]:
        """The items waiting to be read (by `recipient`), oldest first."""
        return [r.value for r in self.kind.list(store, scope, lane=recipient, state=PENDING)]

    def count(self, store: RecordStore, scope: str, recipient: str | None = None,
              state: LetterState = "pending") -> int:
        """How many letters (of `recipient`) are in `state`; unread: pending."""
        return self.kind.count(store, scope, lane=recipient, state=state)

    def inflight(self, store: RecordStore, claimer: str) -> builtins.list[Letter[M]]:
        """Letters the runs of `claimer` claimed and that are not settled yet."""
        return self.list(store, state="claimed", claimed_by=claimer)

    # --- a run reads its mail ------------------------------------------------------------------

    def claim(self, store: RecordStore, scope: str, recipient: str, *, claimer: str, token: str,
              transcript_seq: int | None = None,
              delivered: Delivered[M] | None = None) -> builtins.list[Letter[M]]:
        """Claim every pending letter of `recipient` for the run of `claimer` (the
        agent reading them, fenced by its lease), oldest first; its delivery will be
        written at `transcript_seq`. With `delivered`, letters the transcript already
        holds (mail moved from an older format, read but not yet settled) are settled
        as done and not returned, so they are never delivered twice."""
        if self.kind.count(store, scope, lane=recipient, state=PENDING) == 0:
            return []  # a read, so a quiet round takes no write lock
        note: dict[str, Any] | None = None if transcript_seq is None else {_POSITION: transcript_seq}
        letters = [self.letter(r) for r in
                   self.kind.claim(store, scope, recipient, claimer=claimer, token=token, claim=note)]
        held = set(delivered(letters)) if delivered is not None and letters else set()
        if held:
            self.kind.settle(store, claimer, done=sorted(held), token=token)
        return [letter for letter in letters if letter.id not in held]

    def settle(self, store: RecordStore, claimer: str, *, token: str,
               delivered: Delivered[M]) -> Settled:
        """Settle what the runs of `claimer` claimed: letters `delivered` names are done,
        the others pending again (fenced by `claimer`'s lease)."""
        inflight = self.inflight(store, claimer)
        if not inflight:
            return Settled(0, 0)
        held = set(delivered(inflight))
        done = [letter.id for letter in inflight if letter.id in held]
        requeue = [letter.id for letter in inflight if letter.id not in held]
        self.kind.settle(store, claimer, done=done, requeue=requeue, token=token)
        return Settled(len(done), len(requeue))
