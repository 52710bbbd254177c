"""`JobTotals`: what a job's rows add up to (counts, tokens, cost), kept as they change
instead of read from every row.

A progress view asks twice a second; counting and adding up the rows' payloads took
the store ~150 ms on a finished 10,000-row job. So each process that changes rows
keeps its share of the totals in a `batch.totals` record (key its claimer's id) and
writes it in the same transaction as the rows it changed: a crash loses both or
neither, and processes on other hosts never write the same record (no row every
worker waits on). Reading the totals adds up those few records.

A job stored before totals existed has none: the first process to open it adds its
rows up once and stores that as the job's base share (key "", put only if absent, so
two processes opening it at once count it once).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from mentra_nb.errors import RecordConflict
from mentra_nb.runtime.batch._records import (
    CANCELLED,
    DONE,
    FAILED,
    ROW,
    TOTALS,
    RowState,
    RowTotals,
)
from mentra_nb.store.base import Store
from mentra_nb.store.records import Record, RecordOp

__all__ = ["JobTotals", "base_totals_op", "cancelled", "retried", "settled"]

_BASE = ""  # the key of the share counting the rows as they were when first added up


def base_totals_op(job_id: str) -> RecordOp:
    """The new job's base share (nothing settled yet), stored with its rows."""
    return TOTALS.put_op(job_id, RowTotals(), _BASE, replace=False)


def settled(before: RowState, after: RowState, state: str) -> RowTotals:
    """What settling a claimed row (`before`) as `after` in `state` changes."""
    cost = after.cost_usd
    finished = state in (DONE, FAILED)
    return RowTotals(done=int(state == DONE), failed=int(state == FAILED),
                     cancelled=int(state == CANCELLED),
                     input_tokens=after.input_tokens - before.input_tokens,
                     output_tokens=after.output_tokens - before.output_tokens,
                     cost_usd=(cost or 0.0) if finished else 0.0,
                     unpriced=int(finished and cost is None),
                     costliest=cost if finished else None)


def retried(rows: Iterable[Record[RowState]]) -> RowTotals:
    """What queueing finished rows again changes: they are no longer done, failed or
    cancelled, and what they cost leaves the total (their tokens stay until they rerun)."""
    change = RowTotals()
    for r in rows:
        finished = r.state in (DONE, FAILED)
        cost = r.value.cost_usd
        change = change.plus(RowTotals(
            done=-int(r.state == DONE), failed=-int(r.state == FAILED),
            cancelled=-int(r.state == CANCELLED),
            cost_usd=-(cost or 0.0) if finished else 0.0,
            unpriced=-int(finished and cost is None)))
    return change


def cancelled(count: int) -> RowTotals:
    return RowTotals(cancelled=count)


class JobTotals:
    """One job's totals as one process sees them, and that process's share."""

    def __init__(self, store: Store, job_id: str, claimer: str) -> None:
        self._store = store
        self._job_id = job_id
        self._claimer = claimer
        # Rows settle on the loop while a cell may retry or cancel: one share write at a time.
        self._lock = threading.Lock()
        found = self._shares()
        if not found:
            self._add_up_rows()
            found = self._shares()
        self._mine = found.get(claimer, RowTotals())

    def read(self) -> RowTotals:
        """The job's totals now (every process's share added up)."""
        total = RowTotals()
        for share in self._shares().values():
            total = total.plus(share)
        return total

    def write(self, ops: Sequence[RecordOp], change: RowTotals, *, agent_id: str,
              token: str) -> list[Any]:
        """Write `ops` (which change rows as `change` says) and this process's share in
        one transaction; the results of `ops`."""
        with self._lock:
            mine = self._mine.plus(change)
            results = self._store.write_records(
                [*ops, TOTALS.put_op(self._job_id, mine, self._claimer)], agent_id=agent_id,
                token=token)
            self._mine = mine
        return results[:-1]

    def _shares(self) -> dict[str, RowTotals]:
        return {r.key: r.value for r in TOTALS.list(self._store, self._job_id)}

    def _add_up_rows(self) -> None:
        """A job stored before totals existed: its rows added up once, as its base share."""
        base = RowTotals()
        for r in ROW.list(self._store, self._job_id):
            base = base.plus(settled(RowState(index=0, prompt="", agent_name=""), r.value, r.state))
        # If another process added them up first, its base counts.
        with contextlib.suppress(RecordConflict):
            self._store.write_records([TOTALS.put_op(self._job_id, base, _BASE, replace=False)])
