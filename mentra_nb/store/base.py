"""The store contract: rows the runtime persists and the operations on them.

Every agent-scoped write names the lease `token` of the runtime making it; a
store refuses (`LeaseLost`) a write from a runtime that no longer holds the
agent's lease, so a stale runtime can never overwrite a newer one's work.
Each method is one transaction: it happens whole or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.messages import Message, Role, Usage
from mentra_nb.status import AgentStatus, PendingToolUse
from mentra_nb.store.records import RecordOp, RecordTally, StoredRecord

__all__ = [
    "AgentKind",
    "AgentRecord",
    "BranchRecord",
    "Checkpoint",
    "LeaseClaim",
    "LeaseRecord",
    "PendingTurn",
    "PersistedAgent",
    "RecordSignal",
    "RunRecord",
    "Store",
]


# "agent": a lead the user spawned (what `rt.resume()` returns); "teammate" and
# "subagent" are agents other agents created, revived by their parent.
AgentKind = Literal["agent", "teammate", "subagent"]
"""What an agent is: a lead (`agent`), a `teammate` or a `subagent`."""


class AgentRecord(BaseModel):
    """One agent's identity and durable status (no transcript)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    runtime_id: str
    name: str
    model: str
    config: dict[str, Any] = Field(default_factory=dict)
    status: AgentStatus = Field(default_factory=AgentStatus.idle)
    kind: AgentKind = "agent"
    parent_id: str | None = None  # a teammate's lead, a subagent's parent
    role: str | None = None
    run_generation: int = 0
    usage: Usage = Field(default_factory=Usage)
    message_count: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0
    # Time travel: the branch the transcript is read from (its head; "" means the
    # agent's first branch, whose id is the agent's), and for a fork, the agent it
    # was forked from and how many of that agent's messages it started with.
    branch_id: str = ""
    forked_from: str | None = None
    fork_index: int | None = None

    @property
    def is_teammate(self) -> bool:
        return self.kind == "teammate"


class Checkpoint(BaseModel):
    """One committed message as a point to go back to: `index` is the number of
    messages before it, so `agent.fork(name, at=index)` keeps everything before it
    and `agent.rewind(index)` drops it and what follows."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    index: int
    role: Role
    preview: str  # the message's first words (or its tool traffic), for tables and pickers
    run_generation: int  # the run that wrote it (0: written before schema 6 recorded it)
    created_at: float


class BranchRecord(BaseModel):
    """A line of an agent's history. An agent reads its transcript from its head
    branch: the parent branch's first `fork_index` messages (recursively), then the
    branch's own. A rewind starts a new head and keeps the old one as a branch."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    agent_id: str | None  # None once its agent was deleted while a fork still reads it
    parent_id: str | None
    fork_index: int  # messages taken from the parent branch
    length: int  # messages in the branch's transcript, inherited ones included
    is_head: bool
    created_at: float


class RunRecord(BaseModel):
    """A run in progress: the transcript length when it began (`baseline`) and
    whether an assistant message of it has been committed."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    generation: int
    baseline: int
    assistant_committed: bool = False
    started_at: float = 0.0


class PendingTurn(BaseModel):
    """The uncommitted, half-streamed assistant message of the current round."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    run_generation: int
    current_text: str = ""
    current_thinking: str = ""
    pending_tool_uses: list[PendingToolUse] = Field(default_factory=list)
    updated_at: float = 0.0


class PersistedAgent(BaseModel):
    """Everything stored for one agent."""

    model_config = ConfigDict(defer_build=True)

    record: AgentRecord
    transcript: list[Message]
    run: RunRecord | None = None
    pending_turn: PendingTurn | None = None
    resumable_turn: Message | None = None


class LeaseClaim(BaseModel):
    """Who wants to drive an agent.

    `owner_id` identifies the process and runtime id (stable across Runtime
    objects in one process, so re-running a setup cell re-acquires); `token`
    identifies one Runtime object, so the newest one fences out older ones.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    owner_id: str
    token: str
    runtime_id: str
    pid: int
    host: str
    process_started_at: float
    label: str | None = None


class LeaseRecord(LeaseClaim):
    """A stored lease: who holds the agent, and when its holder last heartbeat."""

    agent_id: str
    acquired_at: float
    heartbeat_at: float


class RecordSignal(Protocol):
    """Tells a runtime that a record may have been queued (put pending, or
    requeued) by another process or host.

    `wait` blocks for up to `timeout` seconds and returns True as soon as one
    may have been (a false alarm is allowed, a missed one is not once it
    committed), False when nothing happened. Used from one thread."""

    def wait(self, timeout: float) -> bool: ...

    def close(self) -> None: ...


@runtime_checkable
class Store(Protocol):
    """Persistence for agents. `SqliteStore` is the embedded default; any other
    implementation must pass `mentra_nb.testing.StoreConformance`.

    A store whose calls wait for a network (`PostgresStore`) sets a class
    attribute `network = True`: a runtime then makes its calls off the event loop,
    on threads of its own, so it must be safe to call from several threads."""

    # --- agents -------------------------------------------------------------
    def create_agent(self, record: AgentRecord, *, token: str) -> None:
        """Insert a new agent. Its lease for `token` must already be held.

        A lead agent's (`kind == "agent"`) name is unique in its runtime, enforced
        by the store so two processes spawning one name at once cannot both win:
        the loser gets `AgentExists` naming the stored agent."""
        ...

    def rename_agent(self, agent_id: str, name: str, *, token: str) -> None:
        """Give a stored agent another name (its transcript and state stay as they
        are); `AgentExists` if a lead of its runtime already has that name."""
        ...

    def load_agent(self, agent_id: str, *, transcript: bool = True) -> PersistedAgent | None:
        """Everything stored for the agent; `transcript=False` leaves the transcript
        out (empty) for callers that load it later, if at all."""
        ...

    def load_messages(self, agent_id: str, start: int = 0, end: int | None = None, *,
                      branch_id: str | None = None) -> list[Message]:
        """Transcript slice `[start, end)`, for paged views; of `branch_id` (one of
        the agent's branches) instead of the head when given. One read, however
        many forks and rewinds the transcript went through."""
        ...

    def list_agents(self, runtime_id: str | None = None, *,
                    parent_id: str | None = None) -> list[AgentRecord]:
        """Agents in creation order, without transcripts; only `runtime_id`'s, and
        only the children (the agents it created) of `parent_id`, when given."""
        ...

    def set_status(self, agent_id: str, status: AgentStatus, *, token: str) -> None: ...

    def update_agent_profile(
        self, agent_id: str, *, role: str | None, config: dict[str, Any], token: str
    ) -> None:
        """Change an agent's role and config (one re-created under its old name)."""
        ...

    # --- runs ---------------------------------------------------------------
    def begin_run(
        self, agent_id: str, run: RunRecord, messages: list[Message], *, status: AgentStatus,
        token: str, clear_resumable: bool = False,
    ) -> None:
        """Append the run's opening messages at `run.baseline` and record the run."""
        ...

    def checkpoint_pending(self, agent_id: str, pending: PendingTurn, *, token: str) -> None: ...

    def commit_assistant(
        self, agent_id: str, message: Message, *, usage: Usage, status: AgentStatus, token: str
    ) -> None:
        """Append one assistant message, mark the run committed, clear the pending turn."""
        ...

    def append_messages(self, agent_id: str, messages: list[Message], *, token: str) -> None: ...

    def finish_run(
        self, agent_id: str, *, status: AgentStatus, token: str, append: list[Message] | None = None,
        usage: Usage | None = None,
    ) -> None:
        """End the run keeping its transcript, appending `append` first (the final
        assistant message, or synthetic tool results) and recording `usage`."""
        ...

    def rollback_run(
        self, agent_id: str, *, status: AgentStatus, resumable: Message | None, token: str
    ) -> None:
        """Delete the run's messages (from its baseline on) and keep `resumable` for a replay."""
        ...

    # --- key/value state per agent ----------------------------------------
    def load_state(self, agent_id: str, key: str) -> Any | None: ...

    def save_state(self, agent_id: str, key: str, value: Any, *, token: str) -> None: ...

    # --- records: rows extensions keep (see mentra_nb.store.records) ----------
    def write_records(self, ops: Sequence[RecordOp], *, agent_id: str | None = None,
                      token: str | None = None) -> list[Any]:
        """Apply `ops` in order as one transaction, all or nothing (`RecordConflict`
        refuses the whole batch); with `token`, only while it holds `agent_id`'s
        lease. A result per op (see each op's class)."""
        ...

    def read_records(self, kind: str, *, scope: str | None = None, key: str | None = None,
                     lane: str | None = None, state: str | None = None,
                     claimed_by: str | None = None) -> list[StoredRecord]:
        """Records of `kind` in insertion order (`seq`), narrowed by what is given."""
        ...

    def count_records(self, kind: str, *, scope: str | None = None, lane: str | None = None,
                      state: str | None = None, claimed_by: str | None = None) -> int: ...

    def tally_records(self, kind: str, *, scope: str | None = None, lane: str | None = None,
                      sums: Sequence[str] = ()) -> dict[str, RecordTally]:
        """Records of `kind` by state: how many, and the totals of the numeric payload
        fields `sums` (see `RecordTally`), counted by the database without reading them."""
        ...

    # --- leases -------------------------------------------------------------
    def acquire_lease(self, agent_id: str, claim: LeaseClaim, *, ttl: float) -> None:
        """Take the lease or raise `LeaseUnavailable` naming the live holder."""
        ...

    def renew_leases(self, token: str) -> int: ...

    def release_leases(self, token: str, agent_ids: list[str] | None = None) -> None: ...

    def lease_holder(self, agent_id: str) -> LeaseRecord | None: ...

    # --- time travel: forks, branches, deletion ------------------------------
    # A fork or a rewind writes O(1) rows whatever the transcript's length: a
    # branch points at its parent branch's first messages instead of copying them.

    def fork_agent(self, record: AgentRecord, *, source_id: str, at: int, token: str) -> None:
        """Create agent `record` (its lease for `token` already held) whose transcript
        is the first `at` committed messages of agent `source_id`'s head, without
        copying them. `record.forked_from` / `fork_index` are stored as given; its
        first branch has the agent's id. `at` beyond the source's committed messages
        is a `StoreError`; a lead's name taken is `AgentExists`, as in `create_agent`.
        The source is not written (no lease of it is needed). If the source later
        rolls back a run past `at`, the rows the fork reads are kept (the source
        moves to a new branch instead of deleting them)."""
        ...

    def rewind(self, agent_id: str, to: int, *, token: str) -> str:
        """Make the agent's transcript its first `to` messages; returns the head
        branch's id. Nothing is deleted: the old head stays a branch (unless it held
        no message of its own, which is then re-pointed in place). Clears the
        resumable turn. A run in progress or `to` outside `[0, message_count]` is a
        `StoreError`."""
        ...

    def switch_branch(self, agent_id: str, branch_id: str, *, token: str) -> None:
        """Make `branch_id` (one of the agent's branches) its head; the transcript
        and message count become that branch's. A head that held no message of its
        own and has no branch off it is dropped (it was only a rewind's pointer).
        Clears the resumable turn; a run in progress is a `StoreError`."""
        ...

    def list_branches(self, agent_id: str) -> list[BranchRecord]:
        """The agent's branches in creation order (the head among them)."""
        ...

    def load_checkpoints(self, agent_id: str, start: int = 0, end: int | None = None, *,
                         branch_id: str | None = None) -> list[Checkpoint]:
        """A `Checkpoint` per committed message in `[start, end)` of the head (or of
        `branch_id`), in order."""
        ...

    def delete_agents(self, agent_ids: list[str], *, token: str) -> None:
        """Delete these agents in one step, each leased by `token`: their rows,
        state, leases, resumable turns, the records they own (scope) or hold
        (claimed_by), and every branch no
        remaining agent reads. Messages a fork of theirs still reads are kept (only
        those). An unknown id is ignored."""
        ...

    def vacuum(self) -> None:
        """Give the space of deleted rows back to the file system."""
        ...

    def record_signal(self) -> RecordSignal:
        """A new signal of records queued through any handle on this storage, by
        any process (SQLite: a poll of `PRAGMA data_version`; Postgres:
        LISTEN/NOTIFY)."""
        ...

    def close(self) -> None: ...
