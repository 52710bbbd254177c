"""The store contract: rows the runtime persists and the operations on them.

Every agent-scoped write names the lease `token` of the runtime making it; a
store refuses (`LeaseLost`) a write from a runtime that no longer holds the
agent's lease, so a stale runtime can never overwrite a newer one's work.
Each method is one transaction: it happens whole or not at all.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.messages import Message, Usage
from mentra_nb.status import AgentStatus, PendingToolUse

__all__ = [
    "AgentKind",
    "AgentRecord",
    "LeaseClaim",
    "LeaseRecord",
    "PendingTurn",
    "PersistedAgent",
    "RunRecord",
    "Store",
]


# "agent": a lead the user spawned (what `rt.resume()` returns); "teammate" and
# "subagent" are agents other agents created, revived by their parent.
AgentKind = Literal["agent", "teammate", "subagent"]


class AgentRecord(BaseModel):
    """One agent's identity and durable status (no transcript)."""

    model_config = ConfigDict(frozen=True)

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


    @property
    def is_teammate(self) -> bool:
        return self.kind == "teammate"


class RunRecord(BaseModel):
    """A run in progress: the transcript length when it began (`baseline`) and
    whether an assistant message of it has been committed."""

    model_config = ConfigDict(frozen=True)

    generation: int
    baseline: int
    assistant_committed: bool = False
    started_at: float = 0.0


class PendingTurn(BaseModel):
    """The uncommitted, half-streamed assistant message of the current round."""

    model_config = ConfigDict(frozen=True)

    run_generation: int
    current_text: str = ""
    current_thinking: str = ""
    pending_tool_uses: list[PendingToolUse] = Field(default_factory=list)
    updated_at: float = 0.0


class PersistedAgent(BaseModel):
    """Everything stored for one agent."""

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

    model_config = ConfigDict(frozen=True)

    owner_id: str
    token: str
    runtime_id: str
    pid: int
    host: str
    process_started_at: float
    label: str | None = None


class LeaseRecord(LeaseClaim):
    agent_id: str
    acquired_at: float
    heartbeat_at: float


@runtime_checkable
class Store(Protocol):
    """Persistence for agents. `SqliteStore` is the embedded default; any other
    implementation must pass `mentra_nb.testing.StoreConformance`."""

    # --- agents -------------------------------------------------------------
    def create_agent(self, record: AgentRecord, *, token: str) -> None:
        """Insert a new agent. Its lease for `token` must already be held."""
        ...

    def load_agent(self, agent_id: str) -> PersistedAgent | None: ...

    def load_messages(self, agent_id: str, start: int = 0, end: int | None = None) -> list[Message]:
        """Transcript slice `[start, end)`, for paged views."""
        ...

    def list_agents(self, runtime_id: str | None = None) -> list[AgentRecord]:
        """Agents in creation order, without transcripts."""
        ...

    def set_status(self, agent_id: str, status: AgentStatus, *, token: str) -> None: ...

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

    # --- leases -------------------------------------------------------------
    def acquire_lease(self, agent_id: str, claim: LeaseClaim, *, ttl: float) -> None:
        """Take the lease or raise `LeaseUnavailable` naming the live holder."""
        ...

    def renew_leases(self, token: str) -> int: ...

    def release_leases(self, token: str, agent_ids: list[str] | None = None) -> None: ...

    def lease_holder(self, agent_id: str) -> LeaseRecord | None: ...

    def close(self) -> None: ...
