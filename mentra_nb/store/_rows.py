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
from mentra_nb.store.base import AgentRecord, LeaseRecord, TeamMail, TeamMessage, TeamRequest

__all__ = [
    "AGENT_COLUMNS", "LEASE_COLUMNS", "MAIL_COLUMNS", "REQUEST_COLUMNS",
    "agent_record", "lease_record", "team_mail", "team_request",
]

AGENT_COLUMNS = (
    "id, runtime_id, name, model, config, status, kind, parent_id, role, run_generation,"
    " usage, message_count, created_at, updated_at, branch_id, forked_from, fork_index"
)
LEASE_COLUMNS = (
    "agent_id, owner_id, token, runtime_id, pid, host, process_started_at, label, acquired_at,"
    " heartbeat_at"
)
MAIL_COLUMNS = "id, team_id, recipient, message, state, claimed_by, transcript_seq"
REQUEST_COLUMNS = (
    "id, team_id, protocol, sender, recipient, content, status, created_at, resolved_at, reason"
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


def team_mail(row: tuple[Any, ...], loads: Loads) -> TeamMail:
    return TeamMail(
        id=row[0], team_id=row[1], recipient=row[2],
        message=TeamMessage.model_validate(loads(row[3])), state=row[4], claimed_by=row[5],
        transcript_seq=row[6],
    )


def team_request(row: tuple[Any, ...]) -> TeamRequest:
    return TeamRequest(
        id=row[0], team_id=row[1], protocol=row[2], sender=row[3], recipient=row[4],
        content=row[5], status=row[6], created_at=row[7], resolved_at=row[8], reason=row[9],
    )


def lease_record(row: tuple[Any, ...]) -> LeaseRecord:
    return LeaseRecord(
        agent_id=row[0], owner_id=row[1], token=row[2], runtime_id=row[3], pid=row[4],
        host=row[5], process_started_at=row[6], label=row[7], acquired_at=row[8],
        heartbeat_at=row[9],
    )
