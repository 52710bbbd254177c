"""`SqlStore`: the `Store` operations both SQL stores share, written once.

A subclass says how it talks to its engine: `_transaction()` (one write
transaction), `_read()`, `_now()` (the clock leases are judged by) and which
driver errors are unique-key violations; and how its transcript is laid out,
the one place the two schemas differ: `_head`, `_append`, `_delete_rows`,
`_insert_branch`, `_branch_length`, `_is_bare_pointer`, `_collect_branches`.
Reading transcripts (`load_agent`, `load_messages`, `load_checkpoints`,
`list_branches`) stays with each engine, tuned to its layout.

The SQL here uses `?` for a parameter and `?j` for a JSON one (see `Dialect`).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, NamedTuple

from mentra_nb.errors import AgentExists, LeaseLost, StoreError
from mentra_nb.messages import Message, Usage, preview
from mentra_nb.status import AgentStatus
from mentra_nb.store import _sql
from mentra_nb.store._decoding import decode_messages
from mentra_nb.store._lease_rules import (
    describe_holder,
    holder_is_live,
    lease_lost_message,
    lease_unavailable,
)
from mentra_nb.store._rows import AGENT_COLUMNS, LEASE_COLUMNS, agent_record, lease_record
from mentra_nb.store.base import (
    AgentRecord,
    BranchRecord,
    Checkpoint,
    LeaseClaim,
    LeaseRecord,
    PendingTurn,
    RunRecord,
)
from mentra_nb.store.records import RecordOp, RecordTally, StoredRecord

__all__ = ["Head", "SqlStore"]

log = logging.getLogger("mentra_nb.store")


class Head(NamedTuple):
    """An agent's head branch and its run, as a write finds them."""

    branch: str
    rows: Any  # what the engine's row primitives address the branch's messages by
    length: int
    generation: int
    run_baseline: int | None


_END_RUN = ("UPDATE agents SET run_baseline = NULL, run_assistant_committed = ?, run_started_at = NULL,"
            " pending_turn = NULL WHERE id = ?")


class SqlStore(ABC):
    """The shared half of `SqliteStore` and `PostgresStore` (see the module)."""

    dialect: _sql.Dialect
    # What error messages call the storage: a file's path, a DSN without its password.
    _where: str

    # --- what a subclass provides ---------------------------------------------------

    @abstractmethod
    def _transaction(self, pipelined: bool = False) -> AbstractContextManager[Any]:
        """One write transaction on a cursor-like object (`execute(sql, params)`).
        `pipelined`: the body reads results only by fetching them (never a
        `rowcount`) and catches no statement's error, so an engine across a network
        may send the statements between two fetches together, and COMMIT with them."""
        ...

    @abstractmethod
    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        ...

    @abstractmethod
    def _decoding(self, what: str) -> AbstractContextManager[None]:
        ...

    @abstractmethod
    def _now(self, cur: Any) -> float:
        """The time leases are judged by, in unix seconds."""
        ...

    @abstractmethod
    def _is_unique_violation(self, err: BaseException | None) -> bool:
        ...

    @abstractmethod
    def _head(self, cur: Any, agent_id: str) -> Head:
        ...

    @abstractmethod
    def _append(self, cur: Any, head: Head, start: int, generation: int,
                messages: list[Message]) -> None:
        ...

    @abstractmethod
    def _delete_rows(self, cur: Any, head: Head, start: int) -> None:
        """Delete the head branch's own rows from position `start` on."""
        ...

    @abstractmethod
    def _insert_branch(self, cur: Any, branch: str, agent_id: str, parent: str | None, at: int,
                       now: float) -> None:
        ...

    @abstractmethod
    def _branch_length(self, cur: Any, branch: str) -> int:
        ...

    @abstractmethod
    def _is_bare_pointer(self, cur: Any, branch: str) -> bool:
        """A branch with a parent, no rows of its own and no branch off it."""
        ...

    @abstractmethod
    def _collect_branches(self, cur: Any) -> None:
        """Delete branches no agent owns and no branch reads (their messages with
        them); trim an ownerless branch a fork still reads to what the fork reads."""
        ...

    # SQL of the last position held by branch `b`'s own rows (NULL when none).
    _BRANCH_LAST_SEQ: str

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Any]:
        """A cursor-like object whose reads see one state of the store."""
        ...

    @abstractmethod
    def _checkpoint_rows(self, agent_id: str, branch_id: str | None, start: int,
                         end: int | None) -> list[tuple[Any, ...]]:
        """(position, message JSON bytes, run generation, created_at) of the head's
        (or `branch_id`'s) committed messages in `[start, end)`, in order."""
        ...

    # --- plumbing -----------------------------------------------------------------------

    def _run(self, cur: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.dialect.run(cur, sql, params)

    @contextmanager
    def _write(self, agent_id: str | None = None, token: str | None = None, *,
               pipelined: bool = False) -> Iterator[Any]:
        """One write transaction; with `token`, only while that token holds the lease.
        `pipelined`: see `_transaction`."""
        with self._transaction(pipelined) as cur:
            if token is not None:
                self._fence(cur, str(agent_id), token)
            yield cur

    @contextmanager
    def _step(self, agent_id: str, token: str) -> Iterator[tuple[Any, Head]]:
        """A run's step: a pipelined write transaction fenced by `token`, with the
        agent's head. To a network store it is two round trips (the fence with the
        head, the writes with the COMMIT) where one per statement took four to eight."""
        with self._transaction(pipelined=True) as cur:
            yield cur, self._fenced_head(cur, agent_id, token)

    _LEASE_ROW = "SELECT token, pid, host FROM leases WHERE agent_id = ?"

    def _fence(self, cur: Any, agent_id: str, token: str) -> None:
        # Postgres: FOR SHARE, so a takeover's UPDATE of this row waits until we
        # commit. SQLite: the write transaction already excludes it.
        row = self._run(cur, self._LEASE_ROW + self.dialect.share_lock, (agent_id,)).fetchone()
        self._judge_lease(row, agent_id, token)

    def _fenced_head(self, cur: Any, agent_id: str, token: str) -> Head:
        """`_fence`, then `_head` (an engine across a network asks for both at once)."""
        self._fence(cur, agent_id, token)
        return self._head(cur, agent_id)

    @staticmethod
    def _judge_lease(row: tuple[Any, ...] | None, agent_id: str, token: str) -> None:
        """Raise `LeaseLost` unless the lease `row` (token, pid, host) is `token`'s."""
        if row is None or row[0] != token:
            raise LeaseLost(lease_lost_message(agent_id, None if row is None else (row[1], row[2])))

    def _select(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._read(self.dialect.sql(sql), tuple(params))

    def _update_agent(self, cur: Any, agent_id: str, *, status: AgentStatus | None = None,
                      usage: Usage | None = None, run_generation: int | None = None,
                      message_count: int | None = None) -> None:
        sets: list[str] = ["updated_at = ?"]
        params: list[Any] = [time.time()]
        for assignment, value in (
            ("status = ?j", None if status is None else status.model_dump_json()),
            ("usage = ?j", None if usage is None else usage.model_dump_json()),
            ("run_generation = ?", run_generation),
            ("message_count = ?", message_count),
        ):
            if value is not None:
                sets.append(assignment)
                params.append(value)
        self._run(cur, f"UPDATE agents SET {', '.join(sets)} WHERE id = ?", (*params, agent_id))

    def _new_head(self, cur: Any, agent_id: str, parent: str, at: int) -> str:
        """A new head branch for the agent reading `parent`'s first `at` messages."""
        branch = uuid.uuid4().hex
        self._insert_branch(cur, branch, agent_id, parent, at, time.time())
        self._run(cur, "UPDATE agents SET branch_id = ? WHERE id = ?", (branch, agent_id))
        return branch

    # --- agents -----------------------------------------------------------------------

    def create_agent(self, record: AgentRecord, *, token: str) -> None:
        self._create(record, token=token, source_id=None, at=0)

    def fork_agent(self, record: AgentRecord, *, source_id: str, at: int, token: str) -> None:
        self._create(record, token=token, source_id=source_id, at=at)

    def _create(self, record: AgentRecord, *, token: str, source_id: str | None, at: int) -> None:
        """The agent's row and its first branch (named after it); a fork's reads the
        first `at` messages of `source_id`'s head branch."""
        now = time.time()
        try:
            with self._write(record.id, token) as cur:
                parent_branch = None
                if source_id is not None:
                    row = self._run(cur, "SELECT branch_id, message_count FROM agents WHERE id = ?",
                                    (source_id,)).fetchone()
                    if row is None:
                        raise StoreError(f"no agent {source_id} in {self._where} to fork")
                    if not 0 <= at <= row[1]:
                        raise StoreError(f"cannot fork agent {source_id} at {at}: it has {row[1]} "
                                         "committed messages")
                    parent_branch = row[0] or source_id
                self._run(
                    cur,
                    "INSERT INTO agents (id, runtime_id, name, model, config, status, kind,"
                    " parent_id, role, run_generation, usage, message_count, created_at, updated_at,"
                    " branch_id, forked_from, fork_index)"
                    " VALUES (?, ?, ?, ?, ?j, ?j, ?, ?, ?, ?, ?j, ?, ?, ?, ?, ?, ?)",
                    (record.id, record.runtime_id, record.name, record.model,
                     json.dumps(record.config), record.status.model_dump_json(), record.kind,
                     record.parent_id, record.role, record.run_generation,
                     record.usage.model_dump_json(), at, record.created_at or now, now,
                     record.id, record.forked_from, record.fork_index),
                )
                self._insert_branch(cur, record.id, record.id, parent_branch, at, now)
        except StoreError as err:
            if not self._is_unique_violation(err.__cause__):
                raise
            if record.kind == "agent" and "name" in str(err.__cause__):
                rows = self._select(
                    "SELECT id FROM agents WHERE runtime_id = ? AND name = ? AND kind = 'agent'",
                    (record.runtime_id, record.name))
                existing = rows[0][0] if rows else "unknown"
                raise AgentExists(
                    f"an agent named '{record.name}' already exists in runtime "
                    f"'{record.runtime_id}' (id {existing}); resume it with "
                    f"rt.resume_agent('{existing}') or pick another name"
                ) from None
            raise StoreError(f"agent {record.id} already exists in {self._where}") from err.__cause__

    def rename_agent(self, agent_id: str, name: str, *, token: str) -> None:
        try:
            with self._write(agent_id, token) as cur:
                self._run(cur, "UPDATE agents SET name = ?, updated_at = ? WHERE id = ?",
                          (name, time.time(), agent_id))
        except StoreError as err:
            if self._is_unique_violation(err.__cause__):
                raise AgentExists(f"an agent named '{name}' already exists beside agent "
                                  f"{agent_id}; pick another name") from None
            raise

    def update_agent_profile(
        self, agent_id: str, *, role: str | None, config: dict[str, Any], token: str
    ) -> None:
        with self._write(agent_id, token) as cur:
            self._run(cur, "UPDATE agents SET role = ?, config = ?j, updated_at = ? WHERE id = ?",
                      (role, json.dumps(config), time.time(), agent_id))

    def list_agents(self, runtime_id: str | None = None, *,
                    parent_id: str | None = None) -> list[AgentRecord]:
        where: list[str] = []
        params: list[Any] = []
        if runtime_id is not None:
            where.append("runtime_id = ?")
            params.append(runtime_id)
        if parent_id is not None:
            where.append("parent_id = ?")
            params.append(parent_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._select(f"SELECT {AGENT_COLUMNS} FROM agents{clause} ORDER BY created_at,"
                            f" {self.dialect.insertion_order}", params)
        with self._decoding("agent record"):
            return [agent_record(row, self.dialect.loads) for row in rows]

    def set_status(self, agent_id: str, status: AgentStatus, *, token: str) -> None:
        with self._write(agent_id, token) as cur:
            self._update_agent(cur, agent_id, status=status)

    # --- runs -------------------------------------------------------------------------

    def begin_run(
        self, agent_id: str, run: RunRecord, messages: list[Message], *, status: AgentStatus,
        token: str, clear_resumable: bool = False,
    ) -> None:
        with self._step(agent_id, token) as (cur, head):
            if head.length != run.baseline:
                raise StoreError(
                    f"agent {agent_id} has {head.length} stored messages but the run starts at "
                    f"{run.baseline}; reload the agent (rt.resume_agent) before sending"
                )
            self._append(cur, head, head.length, run.generation, messages)
            if clear_resumable:
                self._run(cur, "DELETE FROM resumable_turns WHERE agent_id = ?", (agent_id,))
            self._run(cur, "UPDATE agents SET run_baseline = ?, run_assistant_committed = ?,"
                           " run_started_at = ?, pending_turn = NULL WHERE id = ?",
                      (run.baseline, run.assistant_committed, run.started_at or time.time(),
                       agent_id))
            self._update_agent(cur, agent_id, status=status, run_generation=run.generation,
                               message_count=head.length + len(messages))

    def checkpoint_pending(self, agent_id: str, pending: PendingTurn, *, token: str) -> None:
        with self._write(agent_id, token, pipelined=True) as cur:
            self._run(cur, "UPDATE agents SET pending_turn = ?j WHERE id = ?",
                      (pending.model_dump_json(), agent_id))

    def commit_assistant(
        self, agent_id: str, message: Message, *, usage: Usage, status: AgentStatus, token: str
    ) -> None:
        with self._step(agent_id, token) as (cur, head):
            self._append(cur, head, head.length, head.generation, [message])
            self._run(cur, "UPDATE agents SET run_assistant_committed = ?, pending_turn = NULL"
                           " WHERE id = ?", (True, agent_id))
            self._update_agent(cur, agent_id, status=status, usage=usage,
                               message_count=head.length + 1)

    def append_messages(self, agent_id: str, messages: list[Message], *, token: str) -> None:
        with self._step(agent_id, token) as (cur, head):
            self._append(cur, head, head.length, head.generation, messages)
            self._update_agent(cur, agent_id, message_count=head.length + len(messages))

    def finish_run(
        self, agent_id: str, *, status: AgentStatus, token: str, append: list[Message] | None = None,
        usage: Usage | None = None,
    ) -> None:
        with self._step(agent_id, token) as (cur, head):
            count = head.length
            if append:
                self._append(cur, head, count, head.generation, append)
                count += len(append)
            self._run(cur, _END_RUN, (False, agent_id))
            self._update_agent(cur, agent_id, status=status, usage=usage, message_count=count)

    def rollback_run(
        self, agent_id: str, *, status: AgentStatus, resumable: Message | None, token: str
    ) -> None:
        with self._write(agent_id, token) as cur:
            head = self._head(cur, agent_id)
            count = head.length
            if head.run_baseline is not None:
                count = head.run_baseline
                forked_after = self._run(
                    cur, "SELECT 1 FROM branches WHERE parent_id = ? AND fork_index > ? LIMIT 1",
                    (head.branch, count)).fetchone()
                if forked_after is None:
                    self._delete_rows(cur, head, count)
                else:
                    # A fork of the running agent reads messages of this run: keep
                    # them (as a branch) and go on from the baseline on a new head.
                    self._new_head(cur, agent_id, head.branch, count)
            self._run(cur, _END_RUN, (False, agent_id))
            if resumable is not None:
                self._run(cur, "INSERT INTO resumable_turns (agent_id, message) VALUES (?, ?j)"
                               " ON CONFLICT (agent_id) DO UPDATE SET message = excluded.message",
                          (agent_id, resumable.model_dump_json()))
            self._update_agent(cur, agent_id, status=status, message_count=count)

    # --- time travel ------------------------------------------------------------------

    def rewind(self, agent_id: str, to: int, *, token: str) -> str:
        with self._write(agent_id, token) as cur:
            head = self._head(cur, agent_id)
            _refuse_during_run(head, agent_id, "rewind")
            if not 0 <= to <= head.length:
                raise StoreError(f"cannot rewind agent {agent_id} to {to}: it has {head.length} messages")
            self._run(cur, "DELETE FROM resumable_turns WHERE agent_id = ?", (agent_id,))
            if to == head.length:
                return head.branch
            if self._is_bare_pointer(cur, head.branch):
                # The head holds nothing of its own (a rewind's pointer): point it
                # further back rather than leave an empty branch behind.
                self._run(cur, "UPDATE branches SET fork_index = ? WHERE id = ?", (to, head.branch))
                self._update_agent(cur, agent_id, message_count=to)
                return head.branch
            branch = self._new_head(cur, agent_id, head.branch, to)
            self._update_agent(cur, agent_id, message_count=to)
            return branch

    def switch_branch(self, agent_id: str, branch_id: str, *, token: str) -> None:
        with self._write(agent_id, token) as cur:
            head = self._head(cur, agent_id)
            _refuse_during_run(head, agent_id, "switch branches of")
            owner = self._run(cur, "SELECT agent_id FROM branches WHERE id = ?", (branch_id,)).fetchone()
            if owner is None or owner[0] != agent_id:
                raise StoreError(
                    f"agent {agent_id} has no branch {branch_id}; agent.branches() lists its branches")
            self._run(cur, "DELETE FROM resumable_turns WHERE agent_id = ?", (agent_id,))
            if branch_id == head.branch:
                return
            self._run(cur, "UPDATE agents SET branch_id = ? WHERE id = ?", (branch_id, agent_id))
            self._update_agent(cur, agent_id, message_count=self._branch_length(cur, branch_id))
            if self._is_bare_pointer(cur, head.branch) and head.branch != agent_id:
                self._run(cur, "DELETE FROM branches WHERE id = ?", (head.branch,))

    def list_branches(self, agent_id: str) -> list[BranchRecord]:
        with self._reading() as cur:
            head = self._run(cur, "SELECT branch_id FROM agents WHERE id = ?", (agent_id,)).fetchone()
            rows = self._run(
                cur,
                # The agent's branches form a tree under its first branch (id = agent id).
                "WITH RECURSIVE tree(id) AS (SELECT id FROM branches WHERE id = ? AND agent_id = ?"
                " UNION ALL SELECT b.id FROM branches b JOIN tree ON b.parent_id = tree.id"
                " WHERE b.agent_id = ?)"
                f" SELECT b.id, b.agent_id, b.parent_id, b.fork_index, b.created_at, {self._BRANCH_LAST_SEQ}"
                " FROM tree JOIN branches b ON b.id = tree.id ORDER BY b.created_at, b.id",
                (agent_id, agent_id, agent_id)).fetchall()
        return [
            BranchRecord(id=row[0], agent_id=row[1], parent_id=row[2], fork_index=row[3],
                         length=row[3] if row[5] is None else max(row[3], row[5] + 1),
                         is_head=head is not None and row[0] == head[0], created_at=row[4])
            for row in rows
        ]

    def load_checkpoints(self, agent_id: str, start: int = 0, end: int | None = None, *,
                         branch_id: str | None = None) -> list[Checkpoint]:
        rows = self._checkpoint_rows(agent_id, branch_id, start, end)
        with self._decoding(f"message of agent {agent_id}"):
            messages = decode_messages(rows, column=1)
        return [
            Checkpoint(index=row[0], role=message.role, preview=preview(message),
                       run_generation=row[2], created_at=row[3])
            for row, message in zip(rows, messages, strict=True)
        ]

    def delete_agents(self, agent_ids: list[str], *, token: str) -> None:
        with self._write() as cur:
            for agent_id in agent_ids:
                row = self._run(cur, "SELECT token FROM leases WHERE agent_id = ?"
                                + self.dialect.update_lock, (agent_id,)).fetchone()
                known = self._run(cur, "SELECT 1 FROM agents WHERE id = ?", (agent_id,)).fetchone()
                if known is not None and (row is None or row[0] != token):
                    raise LeaseLost(
                        f"this runtime does not hold the lease of agent {agent_id}, so it cannot "
                        "delete it; resume the agent first")
            for agent_id in agent_ids:
                for table, column in (("resumable_turns", "agent_id"), ("state", "agent_id"),
                                      ("leases", "agent_id"), ("records", "scope"),
                                      ("records", "claimed_by"), ("agents", "id")):
                    self._run(cur, f"DELETE FROM {table} WHERE {column} = ?", (agent_id,))
                self._run(cur, "UPDATE branches SET agent_id = NULL WHERE agent_id = ?", (agent_id,))
            self._collect_branches(cur)

    # --- key/value state per agent ----------------------------------------------------

    def load_state(self, agent_id: str, key: str) -> Any | None:
        rows = self._select("SELECT value FROM state WHERE agent_id = ? AND key = ?", (agent_id, key))
        if not rows:
            return None
        with self._decoding(f"state '{key}' of agent {agent_id}"):
            try:
                return self.dialect.loads(rows[0][0])
            except (TypeError, RecursionError) as err:  # a BLOB, or JSON nested beyond reason
                raise ValueError(str(err)) from err

    def save_state(self, agent_id: str, key: str, value: Any, *, token: str) -> None:
        encoded = json.dumps(value)
        with self._write(agent_id, token) as cur:
            self._run(cur, "INSERT INTO state (agent_id, key, value) VALUES (?, ?, ?j)"
                           " ON CONFLICT (agent_id, key) DO UPDATE SET value = excluded.value",
                      (agent_id, key, encoded))

    # --- records ----------------------------------------------------------------------

    def _notify_queued(self, cur: Any) -> None:
        """Tell other processes, at commit, that a record was queued (when they can
        be told rather than poll)."""
        return  # by default nobody is told: other processes poll (SQLite's data_version)

    def write_records(self, ops: Sequence[RecordOp], *, agent_id: str | None = None,
                      token: str | None = None) -> list[Any]:
        with self._write(agent_id, token) as cur:
            return _sql.write_records(self.dialect, cur, ops, notify=lambda: self._notify_queued(cur))

    def read_records(self, kind: str, *, scope: str | None = None, key: str | None = None,
                     lane: str | None = None, state: str | None = None,
                     claimed_by: str | None = None) -> list[StoredRecord]:
        where, params = _sql.record_filter(kind, scope, key, lane, state, claimed_by)
        rows = self._select(f"SELECT {_sql.RECORD_COLUMNS} FROM records WHERE {where} ORDER BY seq",
                            params)
        with self._decoding(f"{kind} record"):
            return [_sql.stored_record(self.dialect, row) for row in rows]

    def count_records(self, kind: str, *, scope: str | None = None, lane: str | None = None,
                      state: str | None = None, claimed_by: str | None = None) -> int:
        where, params = _sql.record_filter(kind, scope, None, lane, state, claimed_by)
        return int(self._select(f"SELECT count(*) FROM records WHERE {where}", params)[0][0])

    def tally_records(self, kind: str, *, scope: str | None = None, lane: str | None = None,
                      sums: Sequence[str] = ()) -> dict[str, RecordTally]:
        sql, params, read = _sql.tally(self.dialect, kind, scope, lane, sums)
        return dict(read(row) for row in self._select(sql, params))

    # --- leases -----------------------------------------------------------------------

    def acquire_lease(self, agent_id: str, claim: LeaseClaim, *, ttl: float) -> None:
        with self._write() as cur:
            now = self._now(cur)
            values = (agent_id, claim.owner_id, claim.token, claim.runtime_id, claim.pid,
                      claim.host, claim.process_started_at, claim.label, now, now)
            inserted = self._run(cur, f"INSERT INTO leases ({LEASE_COLUMNS}) VALUES"
                                      " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id) DO NOTHING",
                                 values).rowcount
            if inserted:
                return
            # Postgres: FOR UPDATE waits for fenced writes of the holder in flight (they
            # hold the row FOR SHARE), so a takeover lands between two of its writes.
            row = self._run(cur, f"SELECT {LEASE_COLUMNS} FROM leases WHERE agent_id = ?"
                            + self.dialect.update_lock, (agent_id,)).fetchone()
            if row is not None:
                holder = lease_record(row)
                if holder.owner_id != claim.owner_id and holder_is_live(holder, claim, now, ttl):
                    raise lease_unavailable(holder, claim, now, ttl)
                if holder.owner_id != claim.owner_id:
                    log.info("taking over agent %s from %s (gone or expired)", agent_id,
                             describe_holder(holder))
            self._run(cur, "UPDATE leases SET owner_id = ?, token = ?, runtime_id = ?, pid = ?,"
                           " host = ?, process_started_at = ?, label = ?, acquired_at = ?,"
                           " heartbeat_at = ? WHERE agent_id = ?", (*values[1:], agent_id))

    def renew_leases(self, token: str) -> int:
        with self._write() as cur:
            return int(self._run(cur, "UPDATE leases SET heartbeat_at = ? WHERE token = ?",
                                 (self._now(cur), token)).rowcount)

    def release_leases(self, token: str, agent_ids: list[str] | None = None) -> None:
        with self._write() as cur:
            if agent_ids is None:
                self._run(cur, "DELETE FROM leases WHERE token = ?", (token,))
            for agent_id in agent_ids or []:
                self._run(cur, "DELETE FROM leases WHERE token = ? AND agent_id = ?", (token, agent_id))

    def lease_holder(self, agent_id: str) -> LeaseRecord | None:
        rows = self._select(f"SELECT {LEASE_COLUMNS} FROM leases WHERE agent_id = ?", (agent_id,))
        return lease_record(rows[0]) if rows else None


def _refuse_during_run(head: Head, agent_id: str, what: str) -> None:
    if head.run_baseline is not None:
        raise StoreError(
            f"cannot {what} agent {agent_id} while a run is in progress; wait for it or cancel it"
        )
