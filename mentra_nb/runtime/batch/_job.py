"""`BatchJob`: an agent over many rows, each row a fork of the agent, durably.

The job's spec and every row live in the store (`_records.py`); this object only
drives them. A row is claimed (moved to CLAIMED, fenced by the source agent's
lease), forked from the agent's history at the job's fork point, run, and settled
with its result in one write. A crash leaves at most the claimed rows behind; the
next runtime that resumes the agent deletes their half-run forks and queues them
again, so every row ends with exactly one result.

On Postgres, workers on other hosts (`_worker.py`) claim rows of the same job, each
under a lease of its own (`Claimer`); whoever drives the job takes back the rows of
a claimer whose lease is gone or expired (`requeue_abandoned`).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil
from pydantic import BaseModel

from mentra_nb.errors import (
    AgentExists,
    ConfigError,
    LeaseUnavailable,
    MentraError,
    TransientProviderError,
)
from mentra_nb.runtime._leases import DEFAULT_LEASE_TTL, host_id
from mentra_nb.runtime.batch._limiter import SharedLimiter
from mentra_nb.runtime.batch._records import (
    CANCELLED,
    CLAIMED,
    DONE,
    FAILED,
    JOB,
    PENDING,
    ROW,
    JobSpec,
    JobState,
    RowState,
    row_key,
)
from mentra_nb.runtime.batch._source import RowAgent, RowSource
from mentra_nb.runtime.batch._totals import JobTotals, cancelled, retried, settled
from mentra_nb.runtime.events import AgentEvent, RetryAttempted
from mentra_nb.store.base import LeaseClaim, Store
from mentra_nb.store.records import Record

__all__ = ["BatchJob", "Claimer", "JobProgress", "model_path", "requeue_abandoned", "resolve_model",
           "status_name"]

log = logging.getLogger("mentra_nb.batch")

_STATUS = {PENDING: "waiting", CLAIMED: "running", DONE: "done", FAILED: "failed",
           CANCELLED: "cancelled"}
# A 429 whose retries ran out puts the row back in the queue, at most this many
# times (then it fails like any error: a provider that never lets it through).
_MAX_THROTTLED_ATTEMPTS = 20
# How often a driver looks for rows whose claimer's lease is gone, and how often it
# looks at the job while only other processes' rows run.
_LOOK_AROUND_S = 1.0


@dataclass(frozen=True)
class Claimer:
    """Whose lease fences a process's claims on a job's rows: in the notebook the
    mapped agent's (`token` its runtime's), in a worker the worker's own."""

    id: str
    token: str
    lease_ttl: float = DEFAULT_LEASE_TTL


def requeue_abandoned(store: Store, job_id: str, claimer: str, ttl: float) -> int:
    """Queue again the job's rows `claimer` holds if its lease is gone or expired (its
    process died, or it stopped heartbeating on another host for `ttl` seconds);
    returns how many. Its lease is taken first, so a claimer that was only slow is
    fenced out (its late results are refused) before its rows run elsewhere."""
    claim = LeaseClaim(owner_id=f"requeue/{uuid.uuid4().hex}", token=uuid.uuid4().hex,
                       runtime_id="", pid=os.getpid(), host=host_id(),
                       process_started_at=psutil.Process().create_time(),
                       label="taking back rows of a gone claimer")
    try:
        store.acquire_lease(claimer, claim, ttl=ttl)
    except LeaseUnavailable:
        return 0  # alive: its rows are running
    try:
        held = [r.seq for r in ROW.list(store, job_id, state=CLAIMED, claimed_by=claimer)]
        return ROW.settle(store, claimer, requeue=held, token=claim.token) if held else 0
    finally:
        store.release_leases(claim.token)


def model_path(model: type[BaseModel]) -> str:
    """Where a resumed runtime finds the output model again."""
    return f"{model.__module__}:{model.__qualname__}"


def resolve_model(path: str) -> type[BaseModel] | None:
    """The class `model_path` named, if this process has it (a notebook's own class
    lives in `__main__` once its cell ran)."""
    module_name, _, qualname = path.partition(":")
    try:
        found: Any = sys.modules.get(module_name) or importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def status_name(state: str) -> str:
    """What `results()` calls a row's stored state (`waiting`, `running`, `done`, ...)."""
    return _STATUS.get(state, state)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


@dataclass(frozen=True)
class JobProgress:
    """Where a job stands (`job.progress()`)."""

    name: str
    state: JobState
    total: int
    done: int
    running: int
    failed: int
    waiting: int
    cancelled: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    rows_per_minute: float
    eta_s: float | None
    throttled: int
    note: str

    @property
    def finished(self) -> int:
        return self.done + self.failed + self.cancelled


class BatchJob:
    """A durable run of `agent` over rows (`agent.map(...)`); see the module doc.

        job = agent.map(df, prompt="Classify: {text}", output=Label, name="reviews")
        await job.wait()
        job.results()        # a DataFrame in input order
    """

    def __init__(self, source: RowSource, spec: JobSpec, output: type[BaseModel] | None, *,
                 claimer: Claimer | None = None) -> None:
        self.source = source
        self._spec = spec
        self.output = output
        self.limiter = SharedLimiter(spec.concurrency)
        self._store = source.services.store
        self._token = source.services.token
        self._claimer = claimer or Claimer(spec.agent_id, self._token)
        self._next_look_around = 0.0
        self._others_run = False  # other processes held rows when last looked
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._driver: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._stopped = threading.Event()  # set whenever the driver is not running
        self._stopped.set()
        self._on_stop: list[Callable[[BatchJob], None]] = []
        self._started_at = time.monotonic()
        self._done_here = 0  # rows this process finished, for rows per minute
        self._totals = JobTotals(self._store, spec.job_id, self._claimer.id)
        self._spent, self._costliest = self._costs()

    def __repr__(self) -> str:
        p = self.progress()
        return (f"<BatchJob {p.name!r} {p.state}: {p.done}/{p.total} done, {p.running} running, "
                f"{p.failed} failed>")

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def id(self) -> str:
        return self._spec.job_id

    @property
    def spec(self) -> JobSpec:
        return self._spec

    @property
    def state(self) -> JobState:
        return self._spec.state

    # --- reading ---------------------------------------------------------------

    def rows(self) -> list[Record[RowState]]:
        """Every row as stored, in input order."""
        return sorted(ROW.list(self._store, self.id), key=lambda r: r.value.index)

    def failed_rows(self, limit: int | None = None) -> list[Record[RowState]]:
        """The failed rows (at most `limit`), in input order, read without the others."""
        failed = sorted(ROW.list(self._store, self.id, lane="", state=FAILED), key=lambda r: r.value.index)
        return failed if limit is None else failed[:limit]

    @property
    def reads_off_loop(self) -> bool:
        """Whether the job's store answers across a network, so that code on the runtime's
        loop reads its progress with `read_progress` (off the loop) rather than `progress()`."""
        return self.source.services.store_io.off_loop

    async def read_progress(self, failures: int = 0) -> tuple[JobProgress, list[Record[RowState]]]:
        """`progress()` and the first `failures` failed rows (`failed_rows`), read the way
        the runtime reads its store from its loop: on its store threads for a network store,
        directly for a local one."""

        def read() -> tuple[JobProgress, list[Record[RowState]]]:
            p = self.progress()
            return p, self.failed_rows(failures) if failures and p.failed else []

        return await self.source.services.store_io.run(f"batch-progress/{self.id}", read)

    def progress(self) -> JobProgress:
        # A view asks twice a second: the kept totals (`_totals.py`) and the running rows
        # (at most a few hundred, counted from the index), never every row.
        totals = self._totals.read()
        running = ROW.count(self._store, self.id, lane="", state=CLAIMED)
        waiting = self._spec.total - totals.done - totals.failed - totals.cancelled - running
        minutes = (time.monotonic() - self._started_at) / 60
        rate = self._done_here / minutes if minutes > 0 else 0.0
        eta = (waiting + running) / rate * 60 if rate > 0 and self.state == "running" else None
        return JobProgress(
            name=self.name, state=self.state, total=self._spec.total, done=totals.done,
            running=running, failed=totals.failed, waiting=waiting, cancelled=totals.cancelled,
            input_tokens=totals.input_tokens, output_tokens=totals.output_tokens,
            # A row of unknown cost makes the total unknown, never a guess.
            cost_usd=totals.cost_usd if totals.unpriced == 0 else None, rows_per_minute=rate,
            eta_s=eta, throttled=self.limiter.throttled, note=self._spec.note)

    def results(self) -> Any:
        """One row per input row, in input order: the output model's fields (or
        `answer`, the reply's text, without one), then `status`, `error`,
        `input_tokens`, `output_tokens`, `cost_usd` and `agent` (the fork that ran it,
        whose transcript `rt.resume_agent` opens). A pandas DataFrame when pandas is
        installed, else a list of dicts."""
        fields = list(self.output.model_fields) if self.output is not None else None
        table: list[dict[str, Any]] = []
        for r in self.rows():
            row = r.value
            if fields is not None:
                answer = row.output or {}
                entry: dict[str, Any] = {f: answer.get(f) for f in fields}
            else:
                entry = {"answer": row.text}
            entry.update(status=_STATUS.get(r.state, r.state), error=row.error,
                         input_tokens=row.input_tokens, output_tokens=row.output_tokens,
                         cost_usd=row.cost_usd, agent=row.agent_name)
            table.append(entry)
        try:
            import pandas as pd  # type: ignore[import-untyped]
        except ImportError:
            return table
        # convert_dtypes: an int field stays int (nullable) where a failed row left a gap.
        frame = pd.DataFrame(table).convert_dtypes()
        # Whole-dollar (or free) costs must not turn the column into integers.
        return frame.astype({"cost_usd": "Float64", "error": "string"})

    # --- controlling -------------------------------------------------------------

    def start(self) -> BatchJob:
        """Drive the job on the running event loop (idempotent)."""
        loop = asyncio.get_running_loop()
        if self._driver is not None and not self._driver.done():
            return self
        if self.state != "running":
            return self
        if self.output is None and self._spec.output is not None:
            raise ConfigError(
                f"job '{self.name}' answers with {self._spec.output}, which this process cannot "
                "import; run the cell that defines it, then the map cell again (it attaches to the job)")
        self._loop = loop
        self._wake = asyncio.Event()
        self._stopped.clear()
        self._driver = loop.create_task(self._drive(), name=f"mentra batch {self.name}")
        self._driver.add_done_callback(self._driver_stopped)
        return self

    def _driver_stopped(self, _task: object) -> None:
        for callback in list(self._on_stop):
            try:
                callback(self)
            except Exception:
                log.exception("a batch job's stop callback failed")
        self._stopped.set()  # after the callbacks: what join() returns to sees their work

    def on_stop(self, callback: Callable[[BatchJob], None]) -> None:
        """Call `callback(job)` on the event loop each time the job stops driving
        (finished, paused, cancelled, stopped by its budget or its runtime)."""
        self._on_stop.append(callback)

    def join(self, timeout: float | None = None) -> BatchJob:
        """Block this thread until the job stops (a notebook cell's way; async code
        awaits `wait()`). Never from the event loop that drives it."""
        if self._loop is not None and self._loop.is_running() and _running_loop() is self._loop:
            raise ConfigError("job.join() would block the event loop that runs the job; await job.wait()")
        if self._driver is None and self.state == "running":
            raise ConfigError(
                f"job '{self.name}' was made outside an event loop, so nothing runs it: in a notebook "
                "use %mentra map (it runs the job on the runtime's thread); in async code, await job.wait()")
        if not self._stopped.wait(timeout):
            raise TimeoutError(f"job '{self.name}' is still running after {timeout} s")
        return self

    async def wait(self) -> BatchJob:
        """Start the job if it is not running, and wait until it stops (finished,
        paused, cancelled, or stopped by its budget)."""
        self.start()
        if self._driver is not None:
            await asyncio.shield(self._driver)
        return self

    def pause(self) -> None:
        """Start no more rows; those running finish. `resume()` goes on."""
        self._set_state("paused", "paused by the user")

    def resume(self) -> BatchJob:
        """Go on with a paused job (or one its budget stopped, after `max_cost_usd` was raised
        with `set_budget`)."""
        if self.state in ("paused", "budget"):
            self._set_state("running", "")
        return self.start()

    def set_budget(self, max_cost_usd: float | None) -> None:
        self._put_spec(self._spec.model_copy(update={"max_cost_usd": max_cost_usd}))

    def cancel(self) -> None:
        """Stop the job: running rows are cancelled (their forks roll back) and every
        row not finished is marked cancelled. Its results so far stay."""
        self._set_state("cancelled", "cancelled by the user")
        if self._driver is not None and not self._driver.done() and self._loop is not None:
            self._loop.call_soon_threadsafe(self._cancel_tasks)  # the driver marks the rows when they stopped
        else:
            self._mark_unfinished_cancelled()

    def abandon(self) -> None:
        """Another job replaced this one (`replace=True`) under its name: stop its running
        rows and write nothing more of it (its spec would overwrite the new job's)."""
        self._spec = self._spec.model_copy(update={"state": "cancelled"})
        if self._driver is not None and not self._driver.done() and self._loop is not None:
            self._loop.call_soon_threadsafe(self._cancel_tasks)

    def retry_failed(self) -> int:
        """Queue the failed rows (and cancelled ones) again, each in a fresh fork;
        returns how many. The job goes on with them once started (`wait()`)."""
        again = [*ROW.list(self._store, self.id, lane="", state=FAILED),
                 *ROW.list(self._store, self.id, lane="", state=CANCELLED)]
        ops = [ROW.update_op(self.id, r.key, r.value.model_copy(update={"error": None}),
                             state=PENDING, expect_state=r.state) for r in again]
        if ops:
            self._totals.write(ops, retried(again), agent_id=self._spec.agent_id, token=self._token)
        self._spent, self._costliest = self._costs()
        if again or self.state != "finished":
            self._set_state("running", "")
        return len(again)

    async def stop_driving(self) -> None:
        """The runtime is closing: stop, leaving running rows claimed (the next resume
        queues them again, as after a crash)."""
        if self._driver is not None and not self._driver.done():
            self._driver.cancel()
            await asyncio.gather(self._driver, return_exceptions=True)

    async def give_back_rows(self) -> None:
        """Stop, roll back the rows running here and queue them again at once, for other
        processes to run (a worker told to stop)."""
        running = list(self._tasks.values())
        await self.stop_driving()
        await asyncio.gather(*running, return_exceptions=True)
        self._requeue_claimed()

    # --- driving --------------------------------------------------------------------

    async def _drive(self) -> None:
        self._requeue_claimed()
        try:
            while self._keeps_running():
                others_run = self._look_around()
                self._start_rows()
                if not self._tasks:
                    if ROW.count(self._store, self.id, state=PENDING) == 0:
                        if not others_run:
                            self._no_rows_left()
                            break
                    elif not self._budget_allows(1):
                        self._stop_for_budget()
                        break
                assert self._wake is not None
                self._wake.clear()
                wait = self.limiter.wait_s()
                if others_run:  # their rows end (or their claimer dies) without telling us
                    wait = min(wait, _LOOK_AROUND_S) if wait > 0 else _LOOK_AROUND_S
                waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._wake.wait())]
                try:
                    await asyncio.wait([*self._tasks.values(), *waiters],
                                       return_when=asyncio.FIRST_COMPLETED,
                                       timeout=wait if wait > 0 else None)
                finally:
                    for w in waiters:
                        w.cancel()
            # Paused or stopped: let the rows that run finish (cancel() cancelled them).
            if self._tasks:
                await asyncio.gather(*self._tasks.values(), return_exceptions=True)
            if self.state == "cancelled":
                self._mark_unfinished_cancelled()
        except asyncio.CancelledError:
            # The runtime is closing: its rows' forks roll back and stay claimed, which the
            # next resume requeues (as after a crash).
            for task in list(self._tasks.values()):
                task.cancel()
            raise

    def _keeps_running(self) -> bool:
        return self.state == "running"

    def _no_rows_left(self) -> None:
        """No row is waiting or running anywhere."""
        self._set_state("finished", "")

    def _look_around(self) -> bool:
        """Whether other processes (workers) hold rows of this job. About once a second
        it looks again: the rows of a claimer whose lease is gone are queued again, and
        what the others' rows cost is counted against the budget."""
        now = time.monotonic()
        if now < self._next_look_around:
            return self._others_run
        self._next_look_around = now + _LOOK_AROUND_S
        claimers = {r.claimed_by for r in ROW.list(self._store, self.id, state=CLAIMED)}
        claimers.discard(self._claimer.id)
        requeued = sum(requeue_abandoned(self._store, self.id, other, self._claimer.lease_ttl)
                       for other in claimers if other is not None)
        if claimers or requeued or self._others_run:
            self._spent, self._costliest = self._costs()
        self._others_run = bool(claimers)
        return self._others_run

    def _start_rows(self) -> None:
        if self.limiter.wait_s() > 0:
            return
        free = self.limiter.slots - len(self._tasks)
        while free > 0 and not self._budget_allows(len(self._tasks) + free):
            free -= 1
        if free <= 0:
            return
        claimed = ROW.claim(self._store, self.id, claimer=self._claimer.id,
                            token=self._claimer.token, limit=free)
        for record in claimed:
            task = asyncio.get_running_loop().create_task(self._run_row(record))
            self._tasks[record.seq] = task
            task.add_done_callback(functools.partial(self._row_ended, record.seq))

    def _row_ended(self, seq: int, task: asyncio.Task[None] | None = None) -> None:
        self._tasks.pop(seq, None)
        if self._wake is None:
            return
        error = None if task is None or task.cancelled() else task.exception()
        if error is None:
            self._wake.set()
            return
        # The row could not run or settle here: taken from us (cancelled by the notebook, our
        # lease taken over: nothing changes), or its old fork is still another's to delete.
        # It goes back in the queue, and this driver looks again a little later, not at once.
        log.warning("a row of job '%s' ended without its result: %s", self.name, error)
        try:
            ROW.settle(self._store, self._claimer.id, requeue=[seq], token=self._claimer.token)
        except MentraError as err:
            log.debug("could not queue the row again: %s", err)
        if self._loop is not None:
            self._loop.call_later(_LOOK_AROUND_S, self._wake.set)

    async def _run_row(self, record: Record[RowState]) -> None:
        row = record.value.model_copy(update={"attempts": record.value.attempts + 1})
        fork = await self._fork(row)
        refusal = None if fork is None else self._refuse_fork(fork)
        if refusal is not None and fork is not None:
            await self.source.runtime.release_agent(fork.id)
            ROW.settle(self._store, self._claimer.id, requeue=[record.seq], token=self._claimer.token)
            self._refused(refusal)
            return
        if fork is None:
            self._settle(record, row.model_copy(update={"error": (
                f"an agent named '{row.agent_name}' that is not this job's row is in the way; "
                "rename or delete it, then job.retry_failed()")}), FAILED)
            return
        unsubscribe = fork.on_event(self._on_row_event, deltas=False)
        throttled: TransientProviderError | None = None
        try:
            result = await fork.run(row.prompt, output=self.output)
        except TransientProviderError as err:
            throttled = err
        except MentraError as err:
            self._settle(record, self._with_usage(row, fork, error=str(err)), FAILED)
            return
        finally:
            unsubscribe()
            if not fork.is_running:
                await self.source.runtime.release_agent(fork.id)
        if throttled is not None:
            # Its retries ran out: the row waits for its turn again, the job slows down.
            self.limiter.slow_down(throttled.retry_after)
            if row.attempts < _MAX_THROTTLED_ATTEMPTS:
                await self._delete_fork(row.agent_name)
                ROW.update(self._store, self.id, record.key, row, state=PENDING, expect_state=CLAIMED,
                           expect_claimer=self._claimer.id, agent_id=self._claimer.id,
                           token=self._claimer.token)
            else:
                self._settle(record, self._with_usage(row, fork, error=str(throttled)), FAILED)
            return
        answer = result.output.model_dump(mode="json") if result.output is not None else None
        done = self._with_usage(row, fork, output=answer, text=result.message.text)
        self._settle(record, done, DONE)
        self.limiter.succeeded()

    def _refuse_fork(self, fork: RowAgent) -> str | None:
        """Why this process must not run a row in `fork` (None: it may)."""
        return None

    def _refused(self, why: str) -> None:
        """This process cannot run the job's rows (a worker's reason); the row went back."""

    async def _fork(self, row: RowState) -> RowAgent | None:
        """The row's fork; an earlier attempt's (a crash, a retry) is deleted first.
        None if an agent of that name is not one of this job's forks."""
        try:
            return self.source.fork(row.agent_name, at=self._spec.fork_index)
        except AgentExists:
            if not await self._delete_fork(row.agent_name):
                return None
            return self.source.fork(row.agent_name, at=self._spec.fork_index)

    def _on_row_event(self, event: AgentEvent) -> None:
        if isinstance(event, RetryAttempted):
            # A provider refused the call for its rate: the whole job slows, not just this row.
            self.limiter.slow_down(event.delay_s)

    def _with_usage(self, row: RowState, fork: RowAgent, **changes: Any) -> RowState:
        usage = fork.usage
        return row.model_copy(update={**changes, "input_tokens": usage.input_tokens,
                                      "output_tokens": usage.output_tokens,
                                      "cost_usd": usage.cost_usd})

    def _settle(self, record: Record[RowState], row: RowState, state: str) -> None:
        # Only while this claimer still holds it: a row cancelled, queued again and claimed by
        # another process meanwhile is no longer this run's to settle.
        op = ROW.update_op(self.id, record.key, row, state=state, expect_state=CLAIMED,
                           expect_claimer=self._claimer.id)
        self._totals.write([op], settled(record.value, row, state), agent_id=self._claimer.id,
                           token=self._claimer.token)
        self._done_here += 1
        if row.cost_usd is not None:
            self._spent += row.cost_usd
            self._costliest = max(self._costliest or 0.0, row.cost_usd)

    def _requeue_claimed(self) -> None:
        """Rows a crashed (or closed) runtime left running go back in the queue (their
        half-run forks are deleted when they run again)."""
        left = ROW.list(self._store, self.id, state=CLAIMED, claimed_by=self._claimer.id)
        if left:
            ROW.settle(self._store, self._claimer.id, requeue=[r.seq for r in left],
                       token=self._claimer.token)

    async def _delete_fork(self, name: str) -> bool:
        """Delete this job's stored fork called `name`; False if that agent is not one."""
        runtime = self.source.runtime
        for record in runtime.list_persisted_agents():
            if record.name == name and record.kind == "agent":
                if record.forked_from != self._spec.agent_id:
                    return False
                await runtime.delete_agent(record.id)
        return True

    def _mark_unfinished_cancelled(self) -> None:
        left = [*ROW.list(self._store, self.id, lane="", state=PENDING),
                *ROW.list(self._store, self.id, lane="", state=CLAIMED)]
        ops = [ROW.update_op(self.id, r.key, r.value, state=CANCELLED, expect_state=r.state)
               for r in left]
        if ops:
            self._totals.write(ops, cancelled(len(ops)), agent_id=self._spec.agent_id,
                               token=self._token)

    def _cancel_tasks(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        if self._wake is not None:
            self._wake.set()

    # --- the budget --------------------------------------------------------------

    def _costs(self) -> tuple[float, float | None]:
        """What the finished rows cost, and the costliest row settled so far (None: none
        priced yet), from the kept totals."""
        totals = self._totals.read()
        return totals.cost_usd, totals.costliest

    def _budget_allows(self, running: int) -> bool:
        """Whether `running` rows at once could all finish under the budget, each
        costing as much as the costliest row so far (until one finished, only one
        runs: nothing is known yet of what a row costs)."""
        limit = self._spec.max_cost_usd
        if limit is None:
            return True
        if self._costliest is None:
            return running <= 1 and self._spent <= limit
        return self._spent + running * self._costliest <= limit

    def _stop_for_budget(self) -> None:
        p = self.progress()
        self._set_state("budget", (
            f"stopped by its budget: ${self._spent:.4f} of ${self._spec.max_cost_usd} spent, "
            f"{p.done + p.failed} of {p.total} rows finished, {p.waiting} not started "
            "(job.set_budget(...) and job.resume() go on)"))

    # --- the stored spec -------------------------------------------------------------

    def _set_state(self, state: JobState, note: str) -> None:
        self._put_spec(self._spec.model_copy(update={"state": state, "note": note}))
        if self._wake is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    def _put_spec(self, spec: JobSpec) -> None:
        JOB.update(self._store, self.source.runtime.runtime_id, spec.name, spec,
                   agent_id=spec.agent_id, token=self._token)
        self._spec = spec


def row_name(job_name: str, index: int) -> str:
    return f"{job_name}-{index}"


def new_rows(job_name: str, prompts: list[str]) -> list[tuple[str, RowState]]:
    return [(row_key(i), RowState(index=i, prompt=p, agent_name=row_name(job_name, i)))
            for i, p in enumerate(prompts)]

