"""The batch extension: keeps one `BatchJob` per stored job this runtime drives (and
one `Comparison` per comparison), goes on with running jobs and comparisons when
their agents are resumed, and keeps the jobs' row forks out of `rt.resume()` (a
10,000-row job must not load 10,000 agents)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from mentra_nb.errors import ConfigError
from mentra_nb.runtime._extensions import RuntimeExtension
from mentra_nb.runtime._services import AgentHandle, HasServices
from mentra_nb.runtime.batch._compare import Comparison, Judge, Verdict, make_comparison
from mentra_nb.runtime.batch._job import BatchJob, resolve_model
from mentra_nb.runtime.batch._map import Prompt, make_job
from mentra_nb.runtime.batch._records import COMPARE, JOB, CompareSpec, JobSpec
from mentra_nb.runtime.batch._source import RowAgent
from mentra_nb.store.base import AgentRecord, Store

__all__ = ["BatchExtension", "compare_rows", "jobs_of", "map_rows"]


class BatchExtension(RuntimeExtension):
    """One of `default_extensions()`; `agent.map(...)` needs it."""

    agent_api: ClassVar[dict[str, Any]] = {"map": lambda agent, *args, **kwargs: map_rows(agent, *args, **kwargs)}
    runtime_api: ClassVar[dict[str, Any]] = {
        "jobs": property(lambda rt: jobs_of(rt)),
        "compare": lambda rt, *args, **kwargs: compare_rows(rt, *args, **kwargs),
    }

    def __init__(self) -> None:
        self._jobs: dict[str, BatchJob] = {}
        self._comparisons: dict[str, Comparison] = {}

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
            job.abandon()

    def comparison(self, spec: CompareSpec, agents: Sequence[RowAgent], output: type[BaseModel] | None,
                   judge_agent: RowAgent | None, judge_output: type[BaseModel] | None) -> Comparison:
        """The live handle of the stored comparison `spec` (made once), its jobs attached."""
        found = self._comparisons.get(spec.compare_id)
        if found is not None:
            return found
        by_id = {a.id: a for a in agents}
        jobs: dict[str, BatchJob] = {}
        store, runtime_id = agents[0].services.store, agents[0].services.runtime_id
        for member in spec.contestants:
            stored = JOB.get(store, runtime_id, member.job_name)
            if stored is None:
                raise ConfigError(f"comparison '{spec.name}' lost its job '{member.job_name}'; "
                                  "run rt.compare(..., replace=True) to start it over")
            jobs[member.agent_name] = self.handle(by_id[member.agent_id], stored.value, output)
        judge = spec.judge
        if judge is not None and judge.job_name is not None and judge_agent is not None:
            stored = JOB.get(store, runtime_id, judge.job_name)
            if stored is not None and spec.judged is not None:
                jobs["judge"] = self.handle(judge_agent, stored.value, judge_output)
        found = Comparison(spec, jobs, agents[0], output, map_rows)
        if judge_agent is not None:
            found.use_judge_agent(judge_agent, judge_output)
        self._comparisons[spec.compare_id] = found
        return found

    def forget_comparison(self, compare_id: str) -> None:
        """Stop driving a comparison that is being replaced (its jobs are replaced with it)."""
        found = self._comparisons.pop(compare_id, None)
        if found is not None:
            found.abandon()

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
        for found in COMPARE.list(store, runtime_id):
            self._resume_comparison(found.value, sources)

    def _resume_comparison(self, spec: CompareSpec, sources: Mapping[str, RowAgent]) -> None:
        """Go on with a stored comparison whose agents were all loaded (and whose output
        models this process has; else its cell, rerun, attaches to it)."""
        if spec.state != "running" or spec.compare_id in self._comparisons:
            return
        agents = [sources.get(c.agent_id) for c in spec.contestants]
        output = resolve_model(spec.output) if spec.output else None
        if any(a is None for a in agents) or (spec.output and output is None):
            return
        judge = spec.judge
        judge_agent = sources.get(judge.agent_id) if judge is not None and judge.agent_id else None
        judge_output = resolve_model(judge.output) if judge is not None and judge.output else None
        found = self.comparison(spec, [a for a in agents if a is not None], output, judge_agent,
                                judge_output)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # `await cmp.wait()` starts it
        found.start()

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
        await asyncio.gather(*(c.stop_driving() for c in self._comparisons.values()),
                             *(job.stop_driving() for job in self._jobs.values()),
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


def compare_rows(runtime: HasServices, rows: Any, agents: Sequence[RowAgent], prompt: Prompt, *,
                 output: type[BaseModel] | None = None, judge: Judge | RowAgent | None = None,
                 judge_output: type[BaseModel] | None = None, concurrency: int = 16,
                 max_cost_usd: float | None = None, name: str | None = None,
                 replace: bool = False) -> Comparison:
    """Run the same rows through each of `agents` (`rt.compare(...)`), side by side:

        cmp = rt.compare(df, agents=[a, b], prompt="Classify: {text}", output=Label)
        await cmp.wait()
        cmp.results()   # a_label, a_status, a_error, a_cost_usd, b_..., agree, judge...
        cmp.costs()     # dollars per agent

    Each agent runs the rows as an ordinary job named `<name>.<agent>` (`agent.map`),
    `concurrency` rows at once; `max_cost_usd` is shared evenly between the jobs (the
    judge agent's too), so the whole comparison stays under it. `judge` is None, a
    function `judge(row, outputs)` returning a verdict, or an agent asked with a typed
    answer (`judge_output`, by default `Verdict`: winner and reason); it judges the rows
    every agent finished, once they all did. Durable like a job: a killed kernel's
    `rt.resume()` goes on with it, and calling `compare` again with the same rows, agents
    and judge attaches to it (`replace=True` starts over). A judge function cannot be
    stored: after a restart the rows are judged once `compare` is called again with it.
    Started at once on a running event loop, else by `cmp.wait()`."""
    services = runtime.services
    extension = services.extension(BatchExtension)
    if extension is None:
        raise ConfigError("rt.compare() needs the batch extension: build the Runtime with "
                          "extensions=[*default_extensions(), ...] (batch is one of them)")
    if isinstance(judge, RowAgent) and judge_output is None:
        judge_output = Verdict
    spec, contestants, values, replaced = make_comparison(
        services, rows, agents, prompt, output=output, judge=judge, judge_output=judge_output,
        concurrency=concurrency, max_cost_usd=max_cost_usd, name=name, replace=replace)
    if replaced is not None:
        extension.forget_comparison(replaced)
    shares = len(contestants) + (1 if isinstance(judge, RowAgent) else 0)
    for agent, member in zip(contestants, spec.contestants, strict=True):
        map_rows(agent, values, prompt, output=output, concurrency=concurrency,
                 max_cost_usd=None if max_cost_usd is None else max_cost_usd / shares,
                 name=member.job_name, replace=replace)
    found = extension.comparison(spec, contestants, output,
                                 judge if isinstance(judge, RowAgent) else None, judge_output)
    found.use_judge(judge, judge_output, values)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return found
    return found.start()
