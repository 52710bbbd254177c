"""A worker: finishes jobs of a shared (Postgres) store from any host, beside the
notebook that started them (`python -m mentra_nb worker --db postgresql://…`).

It looks for open jobs (every notebook's, every runtime id) and drives a
`WorkerJob` for each one it can run: the job's pending rows are claimed under the
worker's own lease (`FOR UPDATE SKIP LOCKED`, so the notebook and every worker
each get other rows), each row runs in its own fork of the mapped agent (read
from the store, never leased: the notebook keeps driving it) on the provider its
stored model names, and the result is written only while that lease holds. The
notebook's job stays in charge of the job's state: pause, cancel and the budget
are read from the store, and the notebook marks the job finished.

A worker runs a job only if it can run it as the notebook would: the output model
must be importable here, the provider known (with its key in the environment), and
its forks must be offered exactly the tools the agent had when the job was made
(same names, descriptions and input schemas). Otherwise it says why once and
leaves the job's rows to the notebook and other workers; it never runs a row with
other tools.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pydantic import BaseModel

from mentra_nb.errors import ConfigError, MentraError
from mentra_nb.providers.base import ModelInfo, Provider
from mentra_nb.runtime._leases import DEFAULT_LEASE_TTL, LeaseKeeper, host_id
from mentra_nb.runtime._runtime import Runtime
from mentra_nb.runtime._services import Services
from mentra_nb.runtime.batch._job import BatchJob, Claimer, resolve_model
from mentra_nb.runtime.batch._records import (
    CLAIMED,
    DONE,
    FAILED,
    JOB,
    PENDING,
    ROW,
    JobSpec,
    tool_fingerprints,
)
from mentra_nb.runtime.batch._source import JobRuntime, RowAgent
from mentra_nb.runtime.tools import Tool
from mentra_nb.store.base import Store

__all__ = ["JobProblem", "Worker", "WorkerJob", "WorkerStopped"]

log = logging.getLogger("mentra_nb.batch")

# How often the worker looks for jobs when no notification woke it.
_POLL_S = 1.0
# How often the progress line is written (when it changed).
_REPORT_S = 2.0


class WorkerStopped(MentraError):
    """The worker lost its lease (it stalled past its TTL) and stopped."""


class JobProblem(Exception):
    """Why this worker cannot run a job's rows (said once; the rows are left to others)."""


class _StoredAgent:
    """The mapped agent as a worker sees it: stored, driven by another process, forked
    from its stored record (`Runtime.fork_stored`) without taking its lease."""

    def __init__(self, runtime: Runtime, spec: JobSpec) -> None:
        self._runtime = runtime
        self.id = spec.agent_id
        self.name = spec.agent_name

    @property
    def services(self) -> Services:
        return self._runtime.services

    @property
    def runtime(self) -> JobRuntime:
        return self._runtime

    def fork(self, new_name: str, at: int | None = None) -> RowAgent:
        return self._runtime.fork_stored(self.id, new_name, at)


class WorkerJob(BatchJob):
    """A job's rows as one worker runs them (see the module doc)."""

    def __init__(self, source: _StoredAgent, spec: JobSpec, output: type[BaseModel] | None,
                 claimer: Claimer, runtime_id: str) -> None:
        super().__init__(source, spec, output, claimer=claimer)
        self.runtime_id = runtime_id
        self.problem: str | None = None
        self._next_refresh = 0.0

    @property
    def rows_done_here(self) -> int:
        return self._done_here

    @property
    def driving(self) -> bool:
        return not self._stopped.is_set()

    def follow(self, spec: JobSpec) -> None:
        """The job as stored now (the notebook paused and resumed it, changed its budget)."""
        if spec.job_id == self.id:
            self._spec = spec

    def _keeps_running(self) -> bool:
        if self.problem is not None:
            return False
        now = time.monotonic()
        if now >= self._next_refresh:  # the notebook may have paused, cancelled or replaced it
            self._next_refresh = now + 0.5
            stored = JOB.get(self._store, self.runtime_id, self.name)
            if stored is None or stored.value.job_id != self.id:
                self._cancel_tasks()
                return False
            self._spec = stored.value
            if self.state == "cancelled":
                self._cancel_tasks()  # the notebook marked the rows cancelled
        return self.state == "running"

    def _no_rows_left(self) -> None:
        """The notebook marks the job finished (it holds the job's lease)."""

    def _stop_for_budget(self) -> None:
        """The notebook's job stops itself; this worker only stops starting rows."""

    def _mark_unfinished_cancelled(self) -> None:
        """The notebook's `cancel()` marked them."""

    def _refuse_fork(self, fork: RowAgent) -> str | None:
        offered = tool_fingerprints(fork.tools())
        wanted = self._spec.tools or {}
        if offered == wanted:
            return None
        missing = sorted(set(wanted) - set(offered))
        extra = sorted(set(offered) - set(wanted))
        differ = sorted(n for n in set(wanted) & set(offered) if wanted[n] != offered[n])
        parts = [f"lacks {', '.join(missing)}" if missing else "",
                 f"has {', '.join(extra)} which the agent was not offered" if extra else "",
                 f"has other versions of {', '.join(differ)}" if differ else ""]
        return ("its agent's tools are not this worker's: this worker "
                + "; ".join(p for p in parts if p)
                + ". Start the worker with --tools MODULE:NAME giving the same tools "
                  "(and --no-builtin-tools if the notebook's runtime had none)")

    def _refused(self, why: str) -> None:
        self.problem = why


@dataclass
class _Seen:
    job: WorkerJob
    told: int = -1  # rows done here when last reported


class Worker:
    """Claims and runs rows of open jobs in `store` until `stop` is set (`run`).

    `providers` and `tools` are what the jobs' agents may need (their models'
    providers, their tools); `builtin_tools` registers the built-in file tools, as
    a notebook's runtime does. `concurrency` caps the rows of one job running here
    at once (default: the job's own `concurrency`). `say` gets the lines a person
    watching the worker reads (a job taken up or refused, progress)."""

    def __init__(self, store: Store, *, providers: Iterable[Provider] = (), tools: Iterable[Tool] = (),
                 builtin_tools: bool = True, concurrency: int | None = None,
                 lease_ttl: float = DEFAULT_LEASE_TTL, say: Callable[[str], None] = print) -> None:
        if not getattr(store, "network", False):
            raise ConfigError("workers need Postgres: a SQLite store's jobs run in the kernel "
                              "that started them")
        self.store = store
        self.id = f"worker-{host_id()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._providers = list(providers)
        self._tools = list(tools)
        self._builtin_tools = builtin_tools
        self._concurrency = concurrency
        self._ttl = lease_ttl
        self._say = say
        self._lease = LeaseKeeper(store, "worker", ttl=lease_ttl, label=self.id)
        self._runtimes: dict[str, Runtime] = {}
        self._jobs: dict[str, _Seen] = {}
        self._refused: dict[str, str] = {}
        self._next_report = 0.0

    # --- the loop --------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Work until `stop` is set; then roll back the rows running here and queue them
        again for others, and let go of every lease."""
        loop = asyncio.get_running_loop()
        self._lease.acquire(self.id)
        wake = asyncio.Event()
        listening = threading.Event()
        listener = threading.Thread(target=self._listen, args=(loop, wake, listening),
                                    name="mentra-worker-listen", daemon=True)
        listener.start()
        self._say(f"{self.id}: claiming rows of open jobs in {self.store!r}")
        try:
            while not stop.is_set():
                try:
                    self._hold_own_lease()
                    self._take_up_jobs()
                    self._report()
                except WorkerStopped:
                    raise
                except MentraError as err:  # the database went away for a moment: try again
                    log.warning("%s: %s", self.id, err)
                wake.clear()
                waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(wake.wait())]
                try:
                    await asyncio.wait(waiters, timeout=_POLL_S, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waiters:
                        w.cancel()
        finally:
            listening.set()
            await self._give_back()
            self._report(final=True)

    def _hold_own_lease(self) -> None:
        """Stop if another process took this worker's lease over (it stalled past its TTL,
        so its rows were queued again and every write of its rows since is refused). It
        never takes the lease back under the same token: its late results would pass."""
        holder = self.store.lease_holder(self.id)
        if holder is None or holder.token != self._lease.token:
            raise WorkerStopped(
                f"{self.id} was silent for longer than its lease TTL ({self._ttl:.0f} s) and "
                "its rows were taken over; start it again (a service manager restarts it)")

    def _listen(self, loop: asyncio.AbstractEventLoop, wake: asyncio.Event,
                stopped: threading.Event) -> None:
        """Wake the loop when rows are queued anywhere (LISTEN/NOTIFY on Postgres)."""
        try:
            signal = self.store.record_signal()
        except MentraError as err:
            log.warning("cannot listen for queued rows (%s); polling every %.0f s", err, _POLL_S)
            return
        try:
            while not stopped.is_set():
                if signal.wait(_POLL_S):
                    loop.call_soon_threadsafe(wake.set)
        except RuntimeError:
            pass  # the loop closed
        finally:
            signal.close()

    async def _give_back(self) -> None:
        running = [seen.job for seen in self._jobs.values()]
        await asyncio.gather(*(job.give_back_rows() for job in running), return_exceptions=True)
        for runtime in self._runtimes.values():
            await runtime.aclose()
        self._lease.close()

    # --- jobs ---------------------------------------------------------------------------

    def _take_up_jobs(self) -> None:
        for record in JOB.list(self.store):
            spec = record.value
            if spec.state != "running" or spec.job_id in self._refused:
                continue
            seen = self._jobs.get(spec.job_id)
            if seen is not None and seen.job.problem is not None:
                self._refuse(spec, seen.job.problem)
                continue
            if seen is not None and seen.job.driving:
                continue  # its driver runs
            open_rows = (ROW.count(self.store, spec.job_id, state=PENDING)
                         + ROW.count(self.store, spec.job_id, state=CLAIMED))
            if not open_rows:
                continue
            try:
                job = seen.job if seen is not None else self._job(record.scope, spec)
            except JobProblem as problem:
                self._refuse(spec, str(problem))
                continue
            job.follow(spec)
            if seen is None:
                self._jobs[spec.job_id] = _Seen(job)
                self._say(f"{self.id}: running rows of job '{spec.name}' (notebook runtime "
                          f"'{record.scope}', agent '{spec.agent_name}', {spec.total} rows)")
            job.start()

    def _job(self, runtime_id: str, spec: JobSpec) -> WorkerJob:
        output = None
        if spec.output is not None:
            output = resolve_model(spec.output)
            if output is None:
                raise JobProblem(
                    f"its rows answer with {spec.output}, which this worker cannot import; define "
                    "that class in a module on the worker's PYTHONPATH (a class defined in a "
                    "notebook cell lives only in its kernel)")
        if spec.tools is None:
            raise JobProblem("it was made by a mentra-nb without workers, which did not record its "
                             "agent's tools; run it in the notebook, or make it again (replace=True)")
        runtime = self._runtime(runtime_id)
        source = self.store.load_agent(spec.agent_id, transcript=False)
        if source is None:
            raise JobProblem(f"its agent '{spec.agent_name}' is no longer stored")
        self._check_provider(runtime, source.record.model)
        if self._concurrency is not None:
            spec = spec.model_copy(update={"concurrency": min(spec.concurrency, self._concurrency)})
        claimer = Claimer(self.id, self._lease.token, self._ttl)
        return WorkerJob(_StoredAgent(runtime, spec), spec, output, claimer, runtime_id)

    def _check_provider(self, runtime: Runtime, model: str) -> None:
        try:
            info = ModelInfo.parse(model)
            provider = runtime.providers.get(info.provider)
        except MentraError as err:
            raise JobProblem(f"its model {model} cannot run here: {err}") from None
        if provider in self._providers or not getattr(provider, "key_required", False):
            return
        names = runtime.providers.traits(info.provider).key_env
        if names and not any(os.environ.get(name) for name in names):
            raise JobProblem(f"its model {model} needs {' or '.join(names)} in this worker's "
                             "environment")

    def _runtime(self, runtime_id: str) -> Runtime:
        """One runtime per notebook (runtime id): the row forks live beside the agent."""
        runtime = self._runtimes.get(runtime_id)
        if runtime is None:
            runtime = self._runtimes[runtime_id] = Runtime(
                store=self.store, providers=self._providers, tools=self._tools, runtime_id=runtime_id,
                builtin_tools=self._builtin_tools, lease_ttl=self._ttl, owner_label=self.id)
        return runtime

    def _refuse(self, spec: JobSpec, why: str) -> None:
        if spec.job_id not in self._refused:
            self._refused[spec.job_id] = why
            self._say(f"{self.id}: not running job '{spec.name}': {why}. Its rows are left to the "
                      "notebook and other workers")

    # --- what a person watching reads --------------------------------------------------

    def _report(self, final: bool = False) -> None:
        now = time.monotonic()
        if now < self._next_report and not final:
            return
        self._next_report = now + _REPORT_S
        for seen in self._jobs.values():
            job = seen.job
            done = job.rows_done_here
            if done == seen.told and not final:
                continue
            seen.told = done
            finished = (ROW.count(self.store, job.id, state=DONE)
                        + ROW.count(self.store, job.id, state=FAILED))
            self._say(f"{self.id}: job '{job.name}': {done} rows done here, "
                      f"{finished}/{job.spec.total} finished in all"
                      + (" (stopped; rows running here were queued again)" if final else ""))
