"""The SQL both stores run, written once: queries use `?` for a parameter and
`?j` for a JSON parameter, and a `Dialect` says how its engine spells those,
how it locks rows a claim takes, and how it hands JSON columns back.

Everything here runs inside a store's own transaction on a cursor-like object
(`execute(sql, params)` returning something with `fetchone`, `fetchall` and
`rowcount`): sqlite3's cursor and psycopg's connection both are.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mentra_nb.errors import RecordConflict
from mentra_nb.store.records import (
    CLAIMED,
    PENDING,
    Claim,
    Delete,
    Put,
    RecordOp,
    Settle,
    StoredRecord,
    Update,
)

__all__ = ["POSTGRES", "QUEUE_MARK", "SQLITE", "Cursor", "Dialect", "count_records", "read_records",
           "write_records"]


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
    loads: Callable[[Any], Any]  # a JSON column as the driver returns it → Python

    def sql(self, text: str) -> str:
        return text.replace("?j", self.json_param).replace("?", self.param)

    def run(self, cur: Cursor, text: str, params: Sequence[Any] = ()) -> _Rows:
        rows: _Rows = cur.execute(self.sql(text), tuple(params))
        return rows


def _as_is(value: Any) -> Any:
    return value


def _json_text(value: Any) -> Any:
    return None if value is None else json.loads(value)


# SQLite: JSON is stored as text; a claim needs no row lock, as its write
# transaction (BEGIN IMMEDIATE) already excludes every other writer.
SQLITE = Dialect(name="sqlite", param="?", json_param="?", skip_locked="", loads=_json_text)
# Postgres: `json` columns (psycopg decodes them); workers claiming at once skip the
# rows another has locked instead of waiting for it, so each gets other rows.
POSTGRES = Dialect(name="postgres", param="%s", json_param="%s::json",
                   skip_locked=" FOR UPDATE SKIP LOCKED", loads=_as_is)


# --- records ------------------------------------------------------------------------

# Moves whenever a record is queued (put pending or requeued): what a polling
# signal compares.
QUEUE_MARK = ("SELECT count(*), coalesce(max(seq), 0), coalesce(max(updated_at), 0) FROM records"
              " WHERE state = 'pending'")
RECORD_COLUMNS = "seq, kind, scope, key, lane, state, claimed_by, claim, value, created_at, updated_at"


def _record(dialect: Dialect, row: Sequence[Any]) -> StoredRecord:
    return StoredRecord(seq=row[0], kind=row[1], scope=row[2], key=row[3], lane=row[4],
                        state=row[5], claimed_by=row[6], claim=dialect.loads(row[7]),
                        value=dialect.loads(row[8]), created_at=row[9], updated_at=row[10])


def _where(kind: str, scope: str | None, key: str | None, lane: str | None, state: str | None,
           claimed_by: str | None) -> tuple[str, list[Any]]:
    clauses, params = ["kind = ?"], [kind]
    for column, value in (("scope", scope), ("key", key), ("lane", lane), ("state", state),
                          ("claimed_by", claimed_by)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return " AND ".join(clauses), params


def read_records(dialect: Dialect, cur: Cursor, kind: str, *, scope: str | None = None,
                 key: str | None = None, lane: str | None = None, state: str | None = None,
                 claimed_by: str | None = None) -> list[StoredRecord]:
    where, params = _where(kind, scope, key, lane, state, claimed_by)
    rows = dialect.run(cur, f"SELECT {RECORD_COLUMNS} FROM records WHERE {where} ORDER BY seq",
                       params).fetchall()
    return [_record(dialect, row) for row in rows]


def count_records(dialect: Dialect, cur: Cursor, kind: str, *, scope: str | None = None,
                  lane: str | None = None, state: str | None = None,
                  claimed_by: str | None = None) -> int:
    where, params = _where(kind, scope, None, lane, state, claimed_by)
    return int(dialect.run(cur, f"SELECT count(*) FROM records WHERE {where}", params).fetchone()[0])


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
            where, params = _where(op.kind, op.scope, op.key, None, None, None)
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
    found = read_records(dialect, cur, kind, scope=scope, key=key)
    return found[0] if found else None


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
    where = "seq = ?" + ("" if op.expect_state is None else " AND state = ?")
    params.append(current.seq)
    if op.expect_state is not None:
        params.append(op.expect_state)
    if not dialect.run(cur, f"UPDATE records SET {', '.join(sets)} WHERE {where}", params).rowcount:
        raise RecordConflict(f"the {op.kind} record {op.key!r} in scope {op.scope!r} is "
                             f"{current.state!r}, not {op.expect_state!r}")
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
    return [_record(dialect, row) for row in rows]


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
