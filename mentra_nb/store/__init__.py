"""Persistence: the `Store` protocol, the embedded `SqliteStore` and `PostgresStore`
(shared by kernels on several hosts; `pip install mentra-nb[postgres]`)."""

from mentra_nb.store.base import (
    AgentKind,
    AgentRecord,
    BranchRecord,
    Checkpoint,
    LeaseClaim,
    LeaseRecord,
    PendingTurn,
    PersistedAgent,
    RecordSignal,
    RunRecord,
    Store,
)
from mentra_nb.store.locations import is_postgres_url, open_store
from mentra_nb.store.postgres import PostgresStore
from mentra_nb.store.records import Record, RecordKind, StoredRecord
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
    "PostgresStore",
    "Record",
    "RecordKind",
    "RecordSignal",
    "RunRecord",
    "SqliteStore",
    "Store",
    "StoredRecord",
    "is_postgres_url",
    "open_store",
]
