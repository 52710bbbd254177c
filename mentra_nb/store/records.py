"""Records: how an extension keeps rows of its own in the store without adding a
method to `Store`.

An extension declares each kind of record it keeps once, with the pydantic model
its payload must match:

    JOBS = RecordKind("myext.jobs", Job)

and reads and writes through the kind, which validates every payload both ways:

    JOBS.append(store, pool_id, Job(row=3), lane="worker-pool", state=PENDING)
    [job] = JOBS.claim(store, pool_id, "worker-pool", claimer=agent_id, token=token, limit=1)
    JOBS.settle(store, agent_id, done=[job.seq], token=token)

A record lives under (kind, scope, key): `scope` is whose it is (an agent's id,
whose deletion deletes it; a runtime id, a pool's), `key` names it in the scope
("" for a kind's one record per scope). The store numbers every record (`seq`,
increasing: insertion order). `lane` and `state` are for queues: a record put
with `state=PENDING` waits in its scope's `lane` until a claim moves it to
CLAIMED for one claimer (on Postgres with `FOR UPDATE SKIP LOCKED`, so workers
claiming at once each get other rows) and a settle moves it to DONE (or any
state) or back to PENDING.

Several operations run as one transaction through `store.write_records([...])`
(build them with a kind's `*_op` methods); with `agent_id=`/`token=` the list
is fenced by that agent's lease like every core write (`LeaseLost`). A `Put`
that finds its key taken (`replace=False`) or an `Update` whose record is
missing, not in `expect_state` or not claimed by `expect_claimer` refuses the whole
list (`RecordConflict`).
"""

from __future__ import annotations

import builtins
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mentra_nb.errors import ConfigError, StoreError

__all__ = [
    "CLAIMED",
    "DONE",
    "PENDING",
    "Claim",
    "Delete",
    "Put",
    "Record",
    "RecordKind",
    "RecordOp",
    "RecordStore",
    "RecordTally",
    "Settle",
    "StoredRecord",
    "Update",
]

# The states a queued record moves through (any other state is the kind's own).
PENDING = "pending"
"""A queued record's state: waiting to be claimed."""
CLAIMED = "claimed"
"""A queued record's state: claimed by one claimer, not yet settled."""
DONE = "done"
"""A queued record's state once settled (any other state name may be used too)."""

M = TypeVar("M", bound=BaseModel)


class StoredRecord(BaseModel):
    """A record as the store keeps it: its payload (`value`) is JSON."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    seq: int
    kind: str
    scope: str
    key: str
    lane: str = ""
    state: str = ""
    claimed_by: str | None = None
    claim: dict[str, Any] | None = None  # what the claimer noted when it claimed the record
    value: Any = None
    created_at: float = 0.0
    updated_at: float = 0.0


# --- operations of a `write_records` call ----------------------------------------


class _Op(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    kind: str


class Put(_Op):
    """Insert the record, or with `replace=True` overwrite the one under its key
    (its `seq` and claim stay). Result: the `StoredRecord`."""

    scope: str
    key: str = ""
    value: Any
    lane: str = ""
    state: str = ""
    replace: bool = True


class Update(_Op):
    """Change a record's payload (`value`, when not None) and/or `state`; only if it
    exists and, with `expect_state`, is in that state (and, with `expect_claimer`, is
    claimed by it: a queued record requeued and claimed again by another claimer is not
    the one its old claimer means). Result: the `StoredRecord`."""

    scope: str
    key: str = ""
    value: Any = None
    state: str | None = None
    expect_state: str | None = None
    expect_claimer: str | None = None


class Delete(_Op):
    """Delete the record under `key`, or every record of the kind in `scope` when
    `key` is None. Result: how many were deleted."""

    scope: str
    key: str | None = None


class Claim(_Op):
    """Move the PENDING records of `scope`'s `lane` (oldest first, at most `limit`)
    to CLAIMED for `claimer`, noting `claim` on each. Result: the claimed records."""

    scope: str
    lane: str = ""
    claimer: str
    limit: int | None = Field(default=None, ge=1)
    claim: dict[str, Any] | None = None


class Settle(_Op):
    """Records CLAIMED by `claimer`: `done` ones (by seq) to `done_state`, `requeue`
    ones back to PENDING (claim cleared). Records it no longer holds are left as
    they are, so settling twice changes nothing. Result: how many changed."""

    claimer: str
    done: list[int] = Field(default_factory=list)
    requeue: list[int] = Field(default_factory=list)
    done_state: str = DONE


RecordOp = Put | Update | Delete | Claim | Settle
"""One operation of a `Store.write_records` call."""


# --- typed access -------------------------------------------------------------------


class RecordStore(Protocol):
    """The part of `Store` records need (every `Store` is one)."""

    def write_records(self, ops: Sequence[RecordOp], *, agent_id: str | None = None,
                      token: str | None = None) -> list[Any]: ...

    def read_records(self, kind: str, *, scope: str | None = None, key: str | None = None,
                     lane: str | None = None, state: str | None = None,
                     claimed_by: str | None = None) -> list[StoredRecord]: ...

    def count_records(self, kind: str, *, scope: str | None = None, lane: str | None = None,
                      state: str | None = None, claimed_by: str | None = None) -> int: ...

    def tally_records(self, kind: str, *, scope: str | None = None, lane: str | None = None,
                      sums: Sequence[str] = ()) -> dict[str, RecordTally]: ...


@dataclass(frozen=True)
class RecordTally:
    """The records of one state (`Store.tally_records`): how many, and for each numeric
    payload field asked for, the sum of its values and how many records had one (a
    field that is null, absent or not a number is not counted)."""

    count: int
    sums: dict[str, float]
    counted: dict[str, int]


@dataclass(frozen=True)
class Record(Generic[M]):
    """A stored record whose payload was validated as its kind's model."""

    seq: int
    kind: str
    scope: str
    key: str
    lane: str
    state: str
    claimed_by: str | None
    claim: dict[str, Any] | None
    value: M
    created_at: float
    updated_at: float


_NAME = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+")
_KINDS: dict[str, type[BaseModel]] = {}


class RecordKind(Generic[M]):
    """A kind of record an extension keeps: `name` is dotted and starts with the
    extension's name ("myext.jobs"); `model` is what every payload must match.
    A name can be declared once per process (again only with the same model)."""

    def __init__(self, name: str, model: type[M]) -> None:
        if not _NAME.fullmatch(name):
            raise ConfigError(
                f"record kind {name!r} is not a dotted lowercase name such as 'myext.items': "
                "start it with your extension's name")
        known = _KINDS.setdefault(name, model)
        if known is not model:
            raise ConfigError(
                f"record kind {name!r} is already declared with model {known.__name__}; "
                "give this one another name")
        self.name = name
        self.model = model

    def __repr__(self) -> str:
        return f"RecordKind({self.name!r}, {self.model.__name__})"

    def record(self, stored: StoredRecord) -> Record[M]:
        """`stored` with its payload validated (a payload that no longer matches the
        model is a `StoreError` naming the record)."""
        if stored.kind != self.name:
            raise StoreError(f"record {stored.seq} is a {stored.kind!r}, not a {self.name!r}")
        try:
            value = self.model.model_validate(stored.value)
        except ValidationError as err:
            raise StoreError(
                f"the store holds a damaged {self.name} record (seq {stored.seq}, scope "
                f"{stored.scope!r}, key {stored.key!r}): {err.error_count()} field(s) do not match "
                f"{self.model.__name__}; fix or delete that record") from err
        return Record(seq=stored.seq, kind=stored.kind, scope=stored.scope, key=stored.key,
                      lane=stored.lane, state=stored.state, claimed_by=stored.claimed_by,
                      claim=stored.claim, value=value, created_at=stored.created_at,
                      updated_at=stored.updated_at)

    def _payload(self, value: M) -> Any:
        if not isinstance(value, self.model):
            raise ConfigError(f"a {self.name} record holds a {self.model.__name__}, "
                              f"not a {type(value).__name__}")
        return value.model_dump(mode="json")

    # --- operations, for write_records -----------------------------------------------

    def put_op(self, scope: str, value: M, key: str = "", *, lane: str = "", state: str = "",
               replace: bool = True) -> Put:
        return Put(kind=self.name, scope=scope, key=key, value=self._payload(value), lane=lane,
                   state=state, replace=replace)

    def append_op(self, scope: str, value: M, *, lane: str = "", state: str = "") -> Put:
        """A new record under a fresh key (a queue item, a log line)."""
        return self.put_op(scope, value, uuid.uuid4().hex, lane=lane, state=state, replace=False)

    def update_op(self, scope: str, key: str = "", value: M | None = None, *,
                  state: str | None = None, expect_state: str | None = None,
                  expect_claimer: str | None = None) -> Update:
        return Update(kind=self.name, scope=scope, key=key,
                      value=None if value is None else self._payload(value), state=state,
                      expect_state=expect_state, expect_claimer=expect_claimer)

    # --- one operation each ------------------------------------------------------------

    def get(self, store: RecordStore, scope: str, key: str = "") -> Record[M] | None:
        found = store.read_records(self.name, scope=scope, key=key)
        return self.record(found[0]) if found else None

    def list(self, store: RecordStore, scope: str | None = None, *, lane: str | None = None,
             state: str | None = None, claimed_by: str | None = None) -> list[Record[M]]:
        """Records of this kind, oldest first, narrowed by what is given."""
        return [self.record(r) for r in store.read_records(
            self.name, scope=scope, lane=lane, state=state, claimed_by=claimed_by)]

    def count(self, store: RecordStore, scope: str | None = None, *, lane: str | None = None,
              state: str | None = None, claimed_by: str | None = None) -> int:
        return store.count_records(self.name, scope=scope, lane=lane, state=state,
                                   claimed_by=claimed_by)

    def tally(self, store: RecordStore, scope: str | None = None, *, lane: str | None = None,
              sums: Sequence[str] = ()) -> dict[str, RecordTally]:
        """Records of this kind by state, counted (and the numeric fields `sums` of their
        payloads added up) by the store, without reading them:

            ITEMS.tally(store, pool_id, sums=["size"])["done"].sums["size"]
        """
        unknown = [f for f in sums if f not in self.model.model_fields]
        if unknown:
            raise ConfigError(f"{self.model.__name__} has no field {', '.join(map(repr, unknown))} to "
                              f"add up; its fields: {', '.join(self.model.model_fields)}")
        return store.tally_records(self.name, scope=scope, lane=lane, sums=sums)

    def put(self, store: RecordStore, scope: str, value: M, key: str = "", *, lane: str = "",
            state: str = "", replace: bool = True, agent_id: str | None = None,
            token: str | None = None) -> Record[M]:
        op = self.put_op(scope, value, key, lane=lane, state=state, replace=replace)
        return self.record(_one(store, op, agent_id, token))

    def append(self, store: RecordStore, scope: str, value: M, *, lane: str = "", state: str = "",
               agent_id: str | None = None, token: str | None = None) -> Record[M]:
        op = self.append_op(scope, value, lane=lane, state=state)
        return self.record(_one(store, op, agent_id, token))

    def update(self, store: RecordStore, scope: str, key: str = "", value: M | None = None, *,
               state: str | None = None, expect_state: str | None = None,
               expect_claimer: str | None = None, agent_id: str | None = None,
               token: str | None = None) -> Record[M]:
        op = self.update_op(scope, key, value, state=state, expect_state=expect_state,
                            expect_claimer=expect_claimer)
        return self.record(_one(store, op, agent_id, token))

    def delete(self, store: RecordStore, scope: str, key: str | None = "", *,
               agent_id: str | None = None, token: str | None = None) -> int:
        """Delete the record under `key`; `key=None` deletes the kind's every record
        in `scope`. Returns how many were deleted."""
        return int(_one(store, Delete(kind=self.name, scope=scope, key=key), agent_id, token))

    def claim(self, store: RecordStore, scope: str, lane: str = "", *, claimer: str, token: str,
              limit: int | None = None,
              claim: dict[str, Any] | None = None) -> builtins.list[Record[M]]:
        """Claim the lane's pending records for `claimer`, fenced by its lease."""
        op = Claim(kind=self.name, scope=scope, lane=lane, claimer=claimer, limit=limit, claim=claim)
        return [self.record(r) for r in _one(store, op, claimer, token)]

    def settle(self, store: RecordStore, claimer: str, *, done: Sequence[int] = (),
               requeue: Sequence[int] = (), token: str, done_state: str = DONE) -> int:
        op = Settle(kind=self.name, claimer=claimer, done=list(done), requeue=list(requeue),
                    done_state=done_state)
        return int(_one(store, op, claimer, token))


def _one(store: RecordStore, op: RecordOp, agent_id: str | None, token: str | None) -> Any:
    [result] = store.write_records([op], agent_id=agent_id, token=token)
    return result
