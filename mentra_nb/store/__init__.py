"""Persistence: the `Store` protocol and the embedded `SqliteStore`."""

from mentra_nb.store.base import (
    AgentKind,
    AgentRecord,
    BranchRecord,
    Checkpoint,
    LeaseClaim,
    LeaseRecord,
    PendingTurn,
    PersistedAgent,
    RunRecord,
    Store,
    TeamMail,
    TeamMessage,
    TeamRequest,
)
from mentra_nb.store.sqlite import SqliteStore

__all__ = [
    "AgentKind",
    "AgentRecord",
    "BranchRecord",
    "Checkpoint",
    "LeaseClaim",
    "LeaseRecord",
    "PendingTurn",
    "PersistedAgent",
    "RunRecord",
    "SqliteStore",
    "Store",
    "TeamMail",
    "TeamMessage",
    "TeamRequest",
]
