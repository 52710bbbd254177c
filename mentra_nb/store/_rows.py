"""Rows of the store's tables as records: the column lists both engines select
and the functions that build records from them.

SQLite hands JSON columns back as text and Postgres (psycopg) as decoded
values, so the builders take `loads`, what turns a JSON column into Python.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mentra_nb.messages import Usage
from mentra_nb.status import AgentStatus
from mentra_nb.store.base import AgentRecord, LeaseRecord

__all__ = [
    "AGENT_COLUMNS", "LEASE_COLUMNS", "agent_record", "lease_record",
]

AGENT_COLUMNS = (
    "id, runtime_id, name, model, config, status, kind, parent_id, role, run_generation,"
    " usage, message_count, created_at, updated_at, branch_id, forked_from, fork_index"
)
LEASE_COLUMNS = (
    "agent_id, owner_id, token, runtime_id, pid, host, process_started_at, label, acquired_at,"
    " heartbeat_at"
)
Loads = Callable[[Any], Any]


def agent_record(row: tuple[Any, ...], loads: Loads) -> AgentRecord:
    return AgentRecord(
        id=row[0], runtime_id=row[1], name=row[2], model=row[3], config=loads(row[4]),
        status=AgentStatus.model_validate(loads(row[5])), kind=row[6],
        parent_id=row[7], role=row[8], run_generation=row[9],
        usage=Usage.model_validate(loads(row[10])), message_count=row[11],
        created_at=row[12], updated_at=row[13], branch_id=row[14] or row[0],
        forked_from=row[15], fork_index=row[16],
    )


def lease_record(row: tuple[Any, ...]) -> LeaseRecord:
    return LeaseRecord(
        agent_id=row[0], owner_id=row[1], token=row[2], runtime_id=row[3], pid=row[4],
        host=row[5], process_started_at=row[6], label=row[7], acquired_at=row[8],
        heartbeat_at=row[9],
    )
