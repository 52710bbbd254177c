"""The batch extension: keeps one `BatchJob` per stored job this runtime drives,
goes on with running jobs when their agent is resumed, and keeps the jobs' row
forks out of `rt.resume()` (a 10,000-row job must not load 10,000 agents)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from mentra_nb.errors import ConfigError
from mentra_nb.runtime._extensions import RuntimeExtension
from mentra_nb.runtime._services import AgentHandle, HasServices
from mentra_nb.runtime.batch._job import BatchJob, resolve_model
from mentra_nb.runtime.batch._map import Prompt, make_job
from mentra_nb.runtime.batch._records import JOB, JobSpec
from mentra_nb.runtime.batch._source import RowAgent
from mentra_nb.store.base import AgentRecord, Store

__all__ = ["BatchExtension", "jobs_of", "map_rows"]


class BatchExtension(RuntimeExtension):
    """One of `default_extensions()`; `agent.map(...)` needs it."""

    agent_api: ClassVar[dict[str, Any]] = {"map": lambda agent, *args, **kwargs: map_rows(agent, *args, **kwargs)}
    runtime_api: ClassVar[dict[str, Any]] = {"jobs": property(lambda rt: jobs_of(rt))}

    def __init__(self) -> None:
        self._jobs: dict[str, BatchJob] = {}

    @property
    def jobs(self) -> list[BatchJob]:
        """The jobs this runtime has a handle on, oldest first."""
        return list(self._jobs.values())

    def handle(self, source: RowAgent, spec: JobSpec, output: type[BaseModel] | None) -> BatchJob:
        """The live handle of the stored job `spec` (made once per job)."""
        job = self._jobs.get(spec.job_id)
        if job is None:
            job = self._jobs[spec.job_id] = BatchJob(source, spec, output)
        elif output is not None and job.output is None:
            job.output = output
        return job

    def attach_job(self, source: RowAgent, spec: JobSpec, output: type[BaseModel] | None) -> BatchJob:
        """`handle`, started when called on the event loop (as `agent.map` is in a notebook's
        runtime thread or an `async` script)."""
        job = self.handle(source, spec, output)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return job  # `await job.wait()` starts it
        return job.start()

    def forget(self, job_id: str) -> None:
        """Stop driving a job that is being replaced."""
        job = self._jobs.pop(job_id, None)
        if job is not None:
            job.cancel()

    def after_resume(self, runtime_id: str, agents: Sequence[AgentHandle]) -> None:
        sources = {a.id: a for a in agents if isinstance(a, RowAgent)}
        if not sources:
            return
        store = next(iter(sources.values())).services.store
        for record in JOB.list(store, runtime_id):
            spec = record.value
            source = sources.get(spec.agent_id)
            if source is None or spec.state != "running":
                continue
            output = resolve_model(spec.output) if spec.output else None
            if spec.output and output is None:
                # Started by the map cell, rerun after the cell defining the model.
                self.handle(source, spec, None)
                continue
            self.attach_job(source, spec, output)

    def agents_left_stored(self, store: Store, runtime_id: str,
                           records: Sequence[AgentRecord]) -> set[str]:
        rows: dict[str, re.Pattern[str]] = {}
        for job in JOB.list(store, runtime_id):
            spec = job.value
            pattern = rows.get(spec.agent_id)
            names = re.escape(spec.name) + r"-\d+"
            rows[spec.agent_id] = re.compile(names if pattern is None else f"{pattern.pattern}|{names}")
        return {r.id for r in records
                if r.forked_from in rows and rows[r.forked_from].fullmatch(r.name)}

    async def aclose(self) -> None:
        await asyncio.gather(*(job.stop_driving() for job in self._jobs.values()),
                             return_exceptions=True)


def jobs_of(runtime: HasServices) -> list[BatchJob]:
    """The batch jobs a runtime (or an agent's runtime) has a handle on: those started
    or attached with `agent.map`, and those `rt.resume()` went on with (`rt.jobs`)."""
    extension = runtime.services.extension(BatchExtension)
    return extension.jobs if extension is not None else []


def map_rows(agent: RowAgent, rows: Any, prompt: Prompt, *, output: type[BaseModel] | None = None,
             concurrency: int = 16, max_cost_usd: float | None = None, name: str | None = None,
             replace: bool = False) -> BatchJob:
    """Run `agent` over `rows` (a DataFrame, a list of dicts, any iterable of rows),
    each row as its own fork of the agent's history as it is now (`agent.map(...)`):

        job = agent.map(df, prompt="Classify: {text}", output=Label, name="reviews")
        await job.wait()
        job.results()       # the output's fields, status, error, tokens, cost, agent

    `prompt` is a template of the row's columns (`{row}` for a row that is not a
    mapping) or a function of the row (a dict). The job lives in the store: a
    killed kernel's `rt.resume()` goes on with it (finished rows never run again),
    and calling `map` again with the same rows attaches to it (`replace=True` starts
    over). `concurrency` rows run at once, fewer while the provider answers 429;
    `max_cost_usd` stops starting rows that could pass it. Started at once on a
    running event loop, else by `job.wait()`."""
    extension = agent.services.extension(BatchExtension)
    if extension is None:
        raise ConfigError("agent.map() needs the batch extension: build the Runtime with "
                          "extensions=[*default_extensions(), ...] (batch is one of them)")
    spec, replaced = make_job(agent, rows, prompt, output=output, concurrency=concurrency,
                              max_cost_usd=max_cost_usd, name=name, replace=replace)
    if replaced is not None:
        extension.forget(replaced)
    return extension.attach_job(agent, spec, output)
