"""The SQL both stores run, written once: queries use `?` for a parameter and
`?j` for a JSON parameter (so no statement holds a literal `?` or `%`), and a
`Dialect` says how its engine spells those, how it locks rows, how it hands JSON
columns back, and, for migrations, its column types, JSON builder and clock.

Here: the records operations (`write_records` and its reads' filter and row),
and the migrations both schemas take (`leases_table`, `team_tables`,
`records_table`, `feature_rows_to_records`). `_sql_store.SqlStore` holds the
rest of the operations. Everything runs inside a store's own transaction on a
cursor-like object (`execute(sql, params)` returning something with `fetchone`,
`fetchall` and `rowcount`): sqlite3's cursor and psycopg's connection both are.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mentra_nb.errors import ConfigError, RecordConflict
from mentra_nb.store.records import (
    CLAIMED,
    PENDING,
    Claim,
    Delete,
    Put,
    RecordOp,
    RecordTally,
    Settle,
    StoredRecord,
    Update,
)

__all__ = ["POSTGRES", "QUEUE_MARK", "RECORD_COLUMNS", "SQLITE", "Cursor", "Dialect",
           "feature_rows_to_records", "leases_table", "record_filter", "records_table", "statements",
           "stored_record", "tally", "team_tables", "write_records"]


class _Rows(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Cursor(Protocol):
    def execute(self, sql: Any, params: Any = ...) -> Any: ...


@dataclass(frozen=True)
class Dialect:
    """What differs between the engines, for the SQL written once here."""

    name: str
    param: str  # how a parameter is written
    json_param: str  # how a parameter holding JSON text is written
    skip_locked: str  # appended to the SELECT of rows a claim takes
    share_lock: str  # appended to a SELECT whose rows a concurrent UPDATE must wait for
    update_lock: str  # appended to a SELECT of rows this transaction will UPDATE
    insertion_order: str  # a column that orders rows as they were inserted
    loads: Callable[[Any], Any]  # a JSON column as the driver returns it → Python
    # For schema migrations: column types, building JSON, the clock.
    serial_key: str  # an integer primary key numbered by the database
    json_type: str
    real_type: str
    json_object: str  # the function building a JSON object from key, value, ...
    json_value: str  # a JSON column as a value inside json_object ({} is the column)
    clock: str  # the time now, in unix seconds
    json_number: str  # a numeric field of the `value` JSON column ({} is the field's name)

    def sql(self, text: str) -> str:
        return text.replace("?j", self.json_param).replace("?", self.param)

    def run(self, cur: Cursor, text: str, params: Sequence[Any] = ()) -> _Rows:
        rows: _Rows = cur.execute(self.sql(text), tuple(params))
        return rows


def _as_is(value: Any) -> Any:
    return value


def _json_text(value: Any) -> Any:
    return None if value is None else json.loads(value)


# SQLite: JSON is stored as text; no row locks, as a write transaction (BEGIN
# IMMEDIATE) already excludes every other writer.
SQLITE = Dialect(name="sqlite", param="?", json_param="?", skip_locked="", share_lock="",
                 update_lock="", insertion_order="rowid", loads=_json_text,
                 serial_key="INTEGER PRIMARY KEY AUTOINCREMENT", json_type="TEXT", real_type="REAL",
                 json_object="json_object", json_value="json({})",
                 clock="CAST(strftime('%s', 'now') AS REAL)",
                 # A string is not a number: only integers and reals are added up.
                 json_number="(CASE WHEN json_type(value, '$.{0}') IN ('integer', 'real')"
                             " THEN json_extract(value, '$.{0}') END)")
# Postgres: `json` columns (psycopg decodes them); workers claiming at once skip the
# rows another has locked instead of waiting for it, so each gets other rows.
POSTGRES = Dialect(name="postgres", param="%s", json_param="%s::json",
                   skip_locked=" FOR UPDATE SKIP LOCKED", share_lock=" FOR SHARE",
                   update_lock=" FOR UPDATE", insertion_order="ord", loads=_as_is,
                   serial_key="BIGSERIAL PRIMARY KEY", json_type="JSON", real_type="DOUBLE PRECISION",
                   json_object="json_build_object", json_value="{}",
                   clock="extract(epoch FROM now())",
                   json_number="(CASE WHEN json_typeof(value -> '{0}') = 'number'"
                               " THEN CAST(value ->> '{0}' AS DOUBLE PRECISION) END)")


# --- migrations both schemas take -------------------------------------------------------


def leases_table(d: Dialect) -> str:
    """Leases, as both schemas first created them."""
    return f"""
    CREATE TABLE leases (
        agent_id TEXT PRIMARY KEY,
        owner_id TEXT NOT NULL,
        token TEXT NOT NULL,
        runtime_id TEXT NOT NULL,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        process_started_at {d.real_type} NOT NULL,
        label TEXT,
        acquired_at {d.real_type} NOT NULL,
        heartbeat_at {d.real_type} NOT NULL
    );
    CREATE INDEX leases_by_token ON leases (token);
    """


def team_tables(d: Dialect, request_order: str) -> str:
    """Team mail and requests, as both schemas first created them (until records
    replaced them). Mail is a queue (pending → inflight → acked); `transcript_seq`
    is where the claiming run writes it, so after a crash the transcript tells
    whether it kept it (ack) or lost it with a rolled-back run (requeue)."""
    order_column = "" if request_order == "rowid" else f"{request_order} {d.serial_key.split()[0]} NOT NULL,"
    order_index = "" if request_order == "rowid" else f", {request_order}"
    return f"""
    CREATE TABLE team_mail (
        id {d.serial_key},
        team_id TEXT NOT NULL,
        recipient TEXT NOT NULL,
        message {d.json_type} NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending',
        claimed_by TEXT,
        transcript_seq INTEGER,
        created_at {d.real_type} NOT NULL,
        updated_at {d.real_type} NOT NULL
    );
    CREATE INDEX team_mail_by_recipient ON team_mail (team_id, recipient, state, id);
    CREATE INDEX team_mail_by_claimer ON team_mail (claimed_by, state);
    CREATE TABLE team_requests (
        id TEXT PRIMARY KEY,
        {order_column}
        team_id TEXT NOT NULL,
        protocol TEXT NOT NULL,
        sender TEXT NOT NULL,
        recipient TEXT NOT NULL,
        content TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending',
        created_at {d.real_type} NOT NULL,
        resolved_at {d.real_type},
        reason TEXT
    );
    CREATE INDEX team_requests_by_team ON team_requests (team_id, created_at{order_index});
    """


def records_table(d: Dialect) -> str:
    """Records, the rows extensions keep (mentra_nb.store.records), one table for
    every kind: a feature adds a record kind, not a table or a store method."""
    return f"""
    CREATE TABLE records (
        seq {d.serial_key},
        kind TEXT NOT NULL,
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        lane TEXT NOT NULL DEFAULT '',
        state TEXT NOT NULL DEFAULT '',
        claimed_by TEXT,
        claim {d.json_type},
        value {d.json_type} NOT NULL,
        created_at {d.real_type} NOT NULL,
        updated_at {d.real_type} NOT NULL
    );
    CREATE UNIQUE INDEX records_by_key ON records (kind, scope, key);
    CREATE INDEX records_by_lane ON records (kind, scope, lane, state, seq);
    CREATE INDEX records_by_claimer ON records (claimed_by, state) WHERE claimed_by IS NOT NULL
    """


def feature_rows_to_records(d: Dialect) -> str:
    """What features kept in tables and keys of their own becomes their records:
    team mail (its states renamed to the records queue's, its transcript position
    the claim's note) and protocol requests, a teammate's state, a subagent tree,
    a runtime's MCP servers. Oldest first, so the records keep their order."""
    return f"""
    INSERT INTO records (kind, scope, key, lane, state, claimed_by, claim, value, created_at,
                         updated_at)
        SELECT 'teams.mail', team_id, CAST(id AS TEXT), recipient,
            CASE state WHEN 'inflight' THEN 'claimed' WHEN 'acked' THEN 'done' ELSE 'pending' END,
            claimed_by, CASE WHEN transcript_seq IS NULL THEN NULL
                ELSE {d.json_object}('transcript_seq', transcript_seq) END,
            message, created_at, updated_at
        FROM team_mail ORDER BY id;
    INSERT INTO records (kind, scope, key, state, value, created_at, updated_at)
        SELECT 'teams.request', team_id, id, status,
            {d.json_object}('id', id, 'team_id', team_id, 'protocol', protocol, 'sender', sender,
                'recipient', recipient, 'content', content, 'status', status,
                'created_at', created_at, 'resolved_at', resolved_at, 'reason', reason),
            created_at, coalesce(resolved_at, created_at)
        FROM team_requests ORDER BY created_at, {d.insertion_order};
    INSERT INTO records (kind, scope, key, value, created_at, updated_at)
        SELECT CASE key WHEN 'team.member.v1' THEN 'teams.member' ELSE 'subagents.tree' END,
            agent_id, '', value, {d.clock}, {d.clock}
        FROM state WHERE key IN ('team.member.v1', 'subagents.v1') ORDER BY agent_id;
    DELETE FROM state WHERE key IN ('team.member.v1', 'subagents.v1');
    INSERT INTO records (kind, scope, key, value, created_at, updated_at)
        SELECT 'mcp.servers', runtime_id, '', {d.json_object}('servers', {d.json_value.format('value')}),
            {d.clock}, {d.clock}
        FROM runtime_state WHERE key = 'mcp.servers.v1';
    DROP TABLE team_mail;
    DROP TABLE team_requests;
    DROP TABLE runtime_state
    """


def statements(script: str) -> list[str]:
    """A migration script's statements (none holds a `;` of its own)."""
    return [s.strip() for s in script.split(";") if s.strip()]


# --- records ------------------------------------------------------------------------

# Moves whenever a record is queued (put pending or requeued): what a polling
# signal compares.
QUEUE_MARK = ("SELECT count(*), coalesce(max(seq), 0), coalesce(max(updated_at), 0) FROM records"
              " WHERE state = 'pending'")
RECORD_COLUMNS = "seq, kind, scope, key, lane, state, claimed_by, claim, value, created_at, updated_at"


def stored_record(dialect: Dialect, row: Sequence[Any]) -> StoredRecord:
    return StoredRecord(seq=row[0], kind=row[1], scope=row[2], key=row[3], lane=row[4],
                        state=row[5], claimed_by=row[6], claim=dialect.loads(row[7]),
                        value=dialect.loads(row[8]), created_at=row[9], updated_at=row[10])


def record_filter(kind: str, scope: str | None, key: str | None, lane: str | None, state: str | None,
           claimed_by: str | None) -> tuple[str, list[Any]]:
    clauses, params = ["kind = ?"], [kind]
    for column, value in (("scope", scope), ("key", key), ("lane", lane), ("state", state),
                          ("claimed_by", claimed_by)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return " AND ".join(clauses), params


# A field's name is written into the query, so it must be a plain name.
_SUMMABLE_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def tally(dialect: Dialect, kind: str, scope: str | None, lane: str | None,
          sums: Sequence[str]) -> tuple[str, list[Any], Callable[[Sequence[Any]], tuple[str, RecordTally]]]:
    """The query counting records by state (adding up the numeric payload fields `sums`),
    its parameters, and how one of its rows reads."""
    for field in sums:
        if not _SUMMABLE_FIELD.fullmatch(field):
            raise ConfigError(f"cannot add up payload field {field!r}: name a field such as 'size'")
    where, params = record_filter(kind, scope, None, lane, None, None)
    columns = "".join(f", sum({n}), count({n})" for n in (dialect.json_number.format(f) for f in sums))
    sql = f"SELECT state, count(*){columns} FROM records WHERE {where} GROUP BY state"

    def read(row: Sequence[Any]) -> tuple[str, RecordTally]:
        got = list(row[2:])
        return row[0], RecordTally(
            count=int(row[1]),
            sums={f: float(got[2 * i] or 0) for i, f in enumerate(sums)},
            counted={f: int(got[2 * i + 1]) for i, f in enumerate(sums)})

    return sql, params, read


def write_records(dialect: Dialect, cur: Cursor, ops: Sequence[RecordOp],
                  notify: Callable[[], None]) -> list[Any]:
    """Apply `ops` in order inside the caller's transaction; `notify` is called once
    if any made a record pending (so listeners for queued work wake at commit)."""
    results: list[Any] = []
    queued = False
    for op in ops:
        now = time.time()
        if isinstance(op, Put):
            results.append(_put(dialect, cur, op, now))
            queued = queued or op.state == PENDING
        elif isinstance(op, Update):
            results.append(_update(dialect, cur, op, now))
            queued = queued or op.state == PENDING
        elif isinstance(op, Delete):
            where, params = record_filter(op.kind, op.scope, op.key, None, None, None)
            results.append(dialect.run(cur, f"DELETE FROM records WHERE {where}", params).rowcount)
        elif isinstance(op, Claim):
            results.append(_claim(dialect, cur, op, now))
        else:
            changed = _settle(dialect, cur, op, now)
            results.append(changed)
            queued = queued or bool(op.requeue)
    if queued:
        notify()
    return results


def _by_key(dialect: Dialect, cur: Cursor, kind: str, scope: str, key: str) -> StoredRecord | None:
    where, params = record_filter(kind, scope, key, None, None, None)
    row = dialect.run(cur, f"SELECT {RECORD_COLUMNS} FROM records WHERE {where}", params).fetchone()
    return None if row is None else stored_record(dialect, row)


def _put(dialect: Dialect, cur: Cursor, op: Put, now: float) -> StoredRecord:
    on_conflict = ("DO UPDATE SET value = excluded.value, lane = excluded.lane, state = excluded.state,"
                   " updated_at = excluded.updated_at" if op.replace else "DO NOTHING")
    inserted = dialect.run(
        cur,
        "INSERT INTO records (kind, scope, key, lane, state, value, created_at, updated_at)"
        f" VALUES (?, ?, ?, ?, ?, ?j, ?, ?) ON CONFLICT (kind, scope, key) {on_conflict}",
        (op.kind, op.scope, op.key, op.lane, op.state, json.dumps(op.value), now, now),
    ).rowcount
    if not inserted:
        raise RecordConflict(f"a {op.kind} record {op.key!r} already exists in scope {op.scope!r}")
    stored = _by_key(dialect, cur, op.kind, op.scope, op.key)
    assert stored is not None  # just written in this transaction
    return stored


def _update(dialect: Dialect, cur: Cursor, op: Update, now: float) -> StoredRecord:
    current = _by_key(dialect, cur, op.kind, op.scope, op.key)
    if current is None:
        raise RecordConflict(f"no {op.kind} record {op.key!r} in scope {op.scope!r} to update")
    sets: list[str] = ["updated_at = ?"]
    params: list[Any] = [now]
    if op.value is not None:
        sets.append("value = ?j")
        params.append(json.dumps(op.value))
    if op.state is not None:
        sets.append("state = ?")
        params.append(op.state)
    # Conditional in the statement itself, so two updates racing cannot both pass.
    where = "seq = ?"
    params.append(current.seq)
    for column, expected in (("state", op.expect_state), ("claimed_by", op.expect_claimer)):
        if expected is not None:
            where += f" AND {column} = ?"
            params.append(expected)
    if not dialect.run(cur, f"UPDATE records SET {', '.join(sets)} WHERE {where}", params).rowcount:
        by = "" if op.expect_claimer is None else f" claimed by {current.claimed_by!r}"
        wanted = "" if op.expect_claimer is None else f" claimed by {op.expect_claimer!r}"
        raise RecordConflict(f"the {op.kind} record {op.key!r} in scope {op.scope!r} is "
                             f"{current.state!r}{by}, not {op.expect_state!r}{wanted}")
    updated = _by_key(dialect, cur, op.kind, op.scope, op.key)
    assert updated is not None
    return updated


def _in(seqs: Sequence[int]) -> str:
    return f"seq IN ({', '.join('?' for _ in seqs)})"


def _claim(dialect: Dialect, cur: Cursor, op: Claim, now: float) -> list[StoredRecord]:
    limit = "" if op.limit is None else f" LIMIT {int(op.limit)}"
    seqs = [int(row[0]) for row in dialect.run(
        cur,
        "SELECT seq FROM records WHERE kind = ? AND scope = ? AND lane = ? AND state = ?"
        f" ORDER BY seq{limit}{dialect.skip_locked}",
        (op.kind, op.scope, op.lane, PENDING),
    ).fetchall()]
    if not seqs:
        return []
    dialect.run(
        cur, f"UPDATE records SET state = ?, claimed_by = ?, claim = ?j, updated_at = ? WHERE {_in(seqs)}",
        (CLAIMED, op.claimer, None if op.claim is None else json.dumps(op.claim), now, *seqs))
    rows = dialect.run(cur, f"SELECT {RECORD_COLUMNS} FROM records WHERE {_in(seqs)} ORDER BY seq",
                       seqs).fetchall()
    return [stored_record(dialect, row) for row in rows]


def _settle(dialect: Dialect, cur: Cursor, op: Settle, now: float) -> int:
    changed = 0
    held = "kind = ? AND claimed_by = ? AND state = ?"
    if op.done:
        changed += dialect.run(cur, f"UPDATE records SET state = ?, updated_at = ? WHERE {held}"
                                    f" AND {_in(op.done)}",
                               (op.done_state, now, op.kind, op.claimer, CLAIMED, *op.done)).rowcount
    if op.requeue:
        changed += dialect.run(cur, "UPDATE records SET state = ?, claimed_by = NULL, claim = NULL,"
                                    f" updated_at = ? WHERE {held} AND {_in(op.requeue)}",
                               (PENDING, now, op.kind, op.claimer, CLAIMED, *op.requeue)).rowcount
    return changed
