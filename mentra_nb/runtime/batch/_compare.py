"""`rt.compare(rows, agents=[a, b], ...)`: the same rows through several agents,
side by side, optionally judged.

A comparison is one ordinary batch job per agent (`<name>.<agent>`), not one job of
(row, agent) rows: a job's rows are forks of one agent fenced by that agent's lease,
so per-agent jobs reuse every durability rule of `_job.py` unchanged (claim, settle
once, requeue after a crash, a rerun attaches) and `rt.resume()` goes on with them
as with any job. The comparison itself only stores which jobs are its own
(`batch.compare`) and judges the rows once every job finished: a judge agent
through one more job (`<name>.judge`, over the rows every agent answered), a judge
function by writing one `batch.verdict` record per row, so a resumed comparison
never judges a row twice.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_core import to_jsonable_python

from mentra_nb.errors import ConfigError
from mentra_nb.runtime.batch._job import BatchJob, JobProgress, model_path, status_name
from mentra_nb.runtime.batch._map import (
    JOB_NAME_RULE,
    Prompt,
    check_job_name,
    check_options,
    fingerprint_of,
    render_prompts,
    row_values,
)
from mentra_nb.runtime.batch._records import (
    COMPARE,
    DONE,
    ROW,
    VERDICT,
    CompareSpec,
    Contestant,
    JudgeSpec,
    VerdictRecord,
    row_key,
)
from mentra_nb.runtime.batch._source import RowAgent
from mentra_nb.store.records import Delete

__all__ = ["Comparison", "Judge", "Verdict", "judge_prompt"]

log = logging.getLogger("mentra_nb.batch")

Judge = Callable[[dict[str, Any], dict[str, Any]], Any]
"""A judge function: `judge(row, outputs)` gets the row (a dict of its columns) and each
agent's answer by agent name (its output model, or its text without one) and returns a
verdict: a number, a string, a bool, a dict or a pydantic model (which become
`judge_<field>` columns). It may be `async`."""


class Verdict(BaseModel):
    """What a judge agent answers by default (`judge_output=` asks for another model)."""

    winner: str = Field(description="the name of the agent whose answer is best, or 'tie'")
    reason: str = Field(description="why, in a sentence")


def judge_prompt(prompt: str, answers: Mapping[str, str]) -> str:
    """What a judge agent is asked about one row: the row's prompt and each agent's answer."""
    parts = [f"{len(answers)} agents answered the same request. Judge which answer is best.",
             "", "The request:", prompt]
    for name, answer in answers.items():
        parts += ["", f"The answer of '{name}':", answer]
    return "\n".join(parts)


class Comparison:
    """The same rows through several agents (`rt.compare(...)`); see the module doc.

        cmp = rt.compare(df, agents=[a, b], prompt="Classify: {text}", output=Label)
        await cmp.wait()
        cmp.results()     # a_label, a_status, ..., b_label, ..., agree, judge columns
        cmp.costs()       # {"a": 0.012, "b": 0.003}
    """

    def __init__(self, spec: CompareSpec, jobs: dict[str, BatchJob], source: RowAgent,
                 output: type[BaseModel] | None, map_job: Callable[..., BatchJob]) -> None:
        self._spec = spec
        self._map_job = map_job  # `map_rows`: how the judge agent's job is made
        self.jobs = jobs
        """Each agent's job by agent name (and the judge agent's as `judge`, once made)."""
        self.output = output
        self._source = source  # the first agent: the comparison's records are fenced by its lease
        self._judge_fn: Judge | None = None
        self._judge_agent: RowAgent | None = None
        self._judge_output: type[BaseModel] | None = None
        self._rows: list[dict[str, Any]] | None = None  # the rows' columns, for a judge function
        self._driver: asyncio.Task[None] | None = None
        self._stopped = threading.Event()
        self._stopped.set()
        self._on_stop: list[Callable[[Comparison], None]] = []
        self.note = ""
        """Why the comparison is not going on, if it is waiting for something."""

    def __repr__(self) -> str:
        parts = ", ".join(f"{name} {p.done}/{p.total}" for name, p in self.progress().items())
        return f"<Comparison {self.name!r} {self.state}: {parts}>"

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def id(self) -> str:
        return self._spec.compare_id

    @property
    def spec(self) -> CompareSpec:
        return self._spec

    @property
    def agents(self) -> list[str]:
        """The compared agents' names, in the order given."""
        return [c.agent_name for c in self._spec.contestants]

    @property
    def state(self) -> str:
        """`finished`; `running`; or, when a job stopped, its state (`paused`, `budget`,
        `cancelled`)."""
        if self._spec.state == "finished":
            return "finished"
        for job in list(self.jobs.values()):
            if job.state not in ("running", "finished"):
                return job.state
        return "running"

    # --- set up by rt.compare ------------------------------------------------------------

    def use_judge(self, judge: Judge | RowAgent | None, judge_output: type[BaseModel] | None,
                  rows: list[dict[str, Any]]) -> None:
        """What this process has to judge with (a function and the rows cannot be stored)."""
        self._rows = rows
        if isinstance(judge, RowAgent):
            self._judge_agent, self._judge_output = judge, judge_output
        elif judge is not None:
            self._judge_fn = judge

    def use_judge_agent(self, agent: RowAgent, output: type[BaseModel] | None) -> None:
        """A resumed runtime's judge agent (its function judge cannot be stored)."""
        self._judge_agent, self._judge_output = agent, output

    # --- reading ---------------------------------------------------------------------------

    def progress(self) -> dict[str, JobProgress]:
        """Each job's progress by agent name (the judge agent's job as `judge`)."""
        # A list first: the judge's job is added on the runtime's thread while a cell reads.
        return {name: job.progress() for name, job in list(self.jobs.items())}

    def costs(self) -> dict[str, float | None]:
        """What each agent's rows cost so far, in dollars, by agent name (`judge`: the judge
        agent's); None where a model's price is unknown."""
        return {name: p.cost_usd for name, p in self.progress().items()}

    def results(self) -> Any:
        """One row per input row, in input order: for each agent (in the order given) its
        output's fields (or `answer`) prefixed with its name, `<agent>_status`,
        `<agent>_error` and `<agent>_cost_usd`; then `agree` (every agent finished and all
        answered the same; empty while one did not) and the judge's `judge` (a plain
        verdict) or `judge_<field>` columns, with `judge_error` when a judge failed. A
        pandas DataFrame when pandas is installed, else a list of dicts."""
        per_agent = [(c.agent_name, self.jobs[c.agent_name].rows()) for c in self._spec.contestants]
        fields = list(self.output.model_fields) if self.output is not None else None
        verdicts = self._verdicts()
        table: list[dict[str, Any]] = []
        for i in range(self._spec.total):
            entry: dict[str, Any] = {}
            answers: list[Any] = []
            for name, rows in per_agent:
                row = rows[i].value
                answer = row.output if fields is not None else row.text
                done = rows[i].state == DONE
                answers.append(answer if done else None)
                if fields is not None:
                    entry.update({f"{name}_{f}": (row.output or {}).get(f) for f in fields})
                else:
                    entry[f"{name}_answer"] = row.text
                entry[f"{name}_status"] = status_name(rows[i].state)
                entry[f"{name}_error"] = row.error
                entry[f"{name}_cost_usd"] = row.cost_usd
            entry["agree"] = (all(a == answers[0] for a in answers)
                              if all(a is not None for a in answers) else None)
            if self._spec.judge is not None:
                entry.update(verdicts.get(i, {}))
            table.append(entry)
        columns = _judge_columns(verdicts) if self._spec.judge is not None else []
        for entry in table:
            for column in columns:
                entry.setdefault(column, None)
        try:
            import pandas as pd  # type: ignore[import-untyped]
        except ImportError:
            return table
        frame = pd.DataFrame(table).convert_dtypes()
        money = {f"{c.agent_name}_cost_usd": "Float64" for c in self._spec.contestants}
        errors = {f"{c.agent_name}_error": "string" for c in self._spec.contestants}
        return frame.astype({**money, **errors, "agree": "boolean"})

    def _verdicts(self) -> dict[int, dict[str, Any]]:
        judge = self._spec.judge
        if judge is None:
            return {}
        found: dict[int, dict[str, Any]] = {}
        if judge.kind == "function":
            for record in VERDICT.list(self._store(), self.id):
                value = record.value
                columns = _verdict_columns(value.verdict)
                if value.error is not None:
                    columns["judge_error"] = value.error
                found[value.index] = columns
            return found
        job = self.jobs.get("judge")
        if job is None or self._spec.judged is None:
            return {}
        for row in job.rows():
            index = self._spec.judged[row.value.index]
            if row.state == DONE:
                found[index] = _verdict_columns(row.value.output if row.value.output is not None
                                                else row.value.text)
            elif row.value.error is not None:
                found[index] = {"judge_error": row.value.error}
        return found

    # --- controlling ----------------------------------------------------------------------

    def start(self) -> Comparison:
        """Drive the comparison on the running event loop (idempotent)."""
        loop = asyncio.get_running_loop()
        if self._spec.state == "finished" or (self._driver is not None and not self._driver.done()):
            return self
        self._stopped.clear()
        self._driver = loop.create_task(self._drive(), name=f"mentra comparison {self.name}")
        self._driver.add_done_callback(self._driver_stopped)
        return self

    def on_stop(self, callback: Callable[[Comparison], None]) -> None:
        """Call `callback(comparison)` on the event loop each time it stops driving
        (finished, or stopped with one of its jobs)."""
        self._on_stop.append(callback)

    def _driver_stopped(self, _task: object) -> None:
        for callback in list(self._on_stop):
            try:
                callback(self)
            except Exception:
                log.exception("a comparison's stop callback failed")
        self._stopped.set()  # after the callbacks: what join() returns to sees their work

    async def wait(self) -> Comparison:
        """Start the comparison if it is not running, and wait until it stops: finished,
        or one of its jobs stopped (paused, cancelled, its budget)."""
        self.start()
        if self._driver is not None:
            await asyncio.shield(self._driver)
        return self

    def join(self, timeout: float | None = None) -> Comparison:
        """Block this thread until the comparison stops (a notebook cell's way; async code
        awaits `wait()`). Never from the event loop that drives it."""
        if self._driver is None and self._spec.state != "finished":
            raise ConfigError(
                f"comparison '{self.name}' was made outside an event loop, so nothing runs it: in a "
                "notebook use %mentra compare (it runs on the runtime's thread); in async code, await "
                "cmp.wait()")
        if self._driver is not None and _on_loop(self._driver.get_loop()):
            raise ConfigError("cmp.join() would block the event loop that runs the comparison; await "
                              "cmp.wait()")
        if not self._stopped.wait(timeout):
            raise TimeoutError(f"comparison '{self.name}' is still running after {timeout} s")
        return self

    def pause(self) -> None:
        """Pause every job (rows running finish); `resume()` goes on."""
        for job in list(self.jobs.values()):
            job.pause()

    def resume(self) -> Comparison:
        """Go on with paused jobs (or those their budget stopped, after `set_budget`)."""
        for job in list(self.jobs.values()):
            job.resume()
        return self.start()

    def cancel(self) -> None:
        """Cancel every job; the results so far stay."""
        for job in list(self.jobs.values()):
            job.cancel()

    def abandon(self) -> None:
        """Another comparison replaced this one under its name: stop driving (its jobs
        are replaced, and abandoned, with it)."""
        if self._driver is not None and not self._driver.done():
            self._driver.get_loop().call_soon_threadsafe(self._driver.cancel)

    async def stop_driving(self) -> None:
        if self._driver is not None and not self._driver.done():
            self._driver.cancel()
            await asyncio.gather(self._driver, return_exceptions=True)

    # --- driving -------------------------------------------------------------------------

    async def _drive(self) -> None:
        contestants = [self.jobs[c.agent_name] for c in self._spec.contestants]
        await asyncio.gather(*(job.wait() for job in contestants))
        if any(job.state != "finished" for job in contestants):
            self.note = "stopped with its jobs: " + ", ".join(
                f"{name} {job.state}" for name, job in self.jobs.items() if job.state != "finished")
            return
        judge = self._spec.judge
        if judge is not None and judge.kind == "function":
            if self._judge_fn is None or self._rows is None:
                self.note = ("every agent finished; its judge function waits for rt.compare(...) to be "
                             "called again with it (a function cannot be stored)")
                return
            await self._judge_with_function(self._judge_fn, self._rows)
        elif judge is not None:
            job = self._judge_job()
            if job is None:
                return
            await job.wait()
            if job.state != "finished":
                self.note = f"stopped with its judge's job: {job.state}"
                return
        self.note = ""
        self._put_spec(self._spec.model_copy(update={"state": "finished"}))

    def _answered_rows(self) -> list[int]:
        """The rows every agent finished (the ones a judge sees)."""
        done = [{r.value.index for r in self.jobs[c.agent_name].rows() if r.state == DONE}
                for c in self._spec.contestants]
        return sorted(set.intersection(*done))

    def _answers(self, index: int) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for c in self._spec.contestants:
            record = ROW.get(self._store(), self.jobs[c.agent_name].id, row_key(index))
            assert record is not None
            value = record.value
            if self.output is not None and value.output is not None:
                answers[c.agent_name] = self.output.model_validate(value.output)
            else:
                answers[c.agent_name] = value.text
        return answers

    async def _judge_with_function(self, judge: Judge, rows: list[dict[str, Any]]) -> None:
        judged = {r.value.index for r in VERDICT.list(self._store(), self.id)}
        for index in self._answered_rows():
            if index in judged:
                continue  # judged before a restart: never again
            try:
                verdict = judge(rows[index], self._answers(index))
                if inspect.isawaitable(verdict):
                    verdict = await verdict
                record = VerdictRecord(index=index, verdict=_jsonable(verdict))
            except Exception as err:  # the user's function: its failure is the row's verdict
                record = VerdictRecord(index=index, error=f"{type(err).__name__}: {err}")
            VERDICT.put(self._store(), self.id, record, row_key(index), replace=False,
                        agent_id=self._source.id, token=self._source.services.token)

    def _judge_job(self) -> BatchJob | None:
        """The judge agent's job over the rows every agent answered: made (or found) now."""
        judge = self._spec.judge
        assert judge is not None and judge.job_name is not None
        agent = self._judge_agent
        if agent is None:
            self.note = "every agent finished; its judge agent is not loaded (rt.resume() loads it)"
            return None
        if judge.output is not None and self._judge_output is None:
            self.note = (f"every agent finished; its judge answers with {judge.output}, which this "
                         "process cannot import: run the cell that defines it, then rt.compare(...) again")
            return None
        first = self.jobs[self._spec.contestants[0].agent_name]
        rows = self._answered_rows()
        prompts = []
        for i in rows:
            record = ROW.get(self._store(), first.id, row_key(i))
            assert record is not None
            answers = {name: _answer_text(answer) for name, answer in self._answers(i).items()}
            prompts.append({"prompt": judge_prompt(record.value.prompt, answers)})
        # The rows it covers are stored first: a crash before the job is made finds them
        # equal and makes it; rows that changed since (a retried row) start it over.
        replace = self._spec.judged != rows
        if replace:
            self._put_spec(self._spec.model_copy(update={"judged": rows}))
        job = self._map_job(agent, prompts, "{prompt}", output=self._judge_output,
                            concurrency=first.spec.concurrency, max_cost_usd=first.spec.max_cost_usd,
                            name=judge.job_name, replace=replace)
        self.jobs["judge"] = job
        return job

    # --- the store ---------------------------------------------------------------------

    def _store(self) -> Any:
        return self._source.services.store

    def _put_spec(self, spec: CompareSpec) -> None:
        COMPARE.put(self._store(), self._source.services.runtime_id, spec, spec.name,
                    agent_id=self._source.id, token=self._source.services.token)
        self._spec = spec


# --- making one ------------------------------------------------------------------------------


def make_comparison(runtime_services: Any, rows: Any, agents: Any, prompt: Prompt, *,
                    output: type[BaseModel] | None, judge: Any, judge_output: type[BaseModel] | None,
                    concurrency: int, max_cost_usd: float | None, name: str | None,
                    replace: bool) -> tuple[CompareSpec, list[RowAgent], list[dict[str, Any]], str | None]:
    """Check everything, then store the comparison (or find the stored one of that name):
    its spec, the agents, the rows' columns, and the id of a comparison it replaced."""
    contestants = _check_agents(runtime_services, agents)
    judge_kind = _check_judge(runtime_services, judge, judge_output)
    check_options(concurrency, max_cost_usd, output)
    values = row_values(rows)
    prompts = render_prompts(values, prompt)
    judge_desc = ("" if judge_kind is None else
                  f"agent:{judge.id}:{model_path(judge_output) if judge_output else ''}" if judge_kind == "agent"
                  else "function")
    fingerprint = fingerprint_of([model_path(output) if output else "", judge_desc,
                                  *(a.id for a in contestants), *prompts])
    name = check_job_name(name if name is not None else f"compare-{fingerprint[:8]}", "comparison name")
    members = [Contestant(agent_id=a.id, agent_name=a.name,
                          job_name=check_job_name(f"{name}.{a.name}", _too_long(name, a.name)))
               for a in contestants]
    judge_spec: JudgeSpec | None = None
    if judge_kind == "agent":
        judge_spec = JudgeSpec(kind="agent", description=judge.name, agent_id=judge.id,
                               job_name=check_job_name(f"{name}.judge", _too_long(name, "judge")),
                               output=model_path(judge_output) if judge_output else None)
    elif judge_kind == "function":
        judge_spec = JudgeSpec(kind="function", description=getattr(judge, "__qualname__", repr(judge)))
    source = contestants[0]
    store, runtime_id, token = source.services.store, source.services.runtime_id, source.services.token
    stored = COMPARE.get(store, runtime_id, name)
    if stored is not None and not replace:
        if stored.value.fingerprint != fingerprint:
            raise ConfigError(
                f"a comparison named '{name}' is stored with other rows (or another prompt, output, "
                "agents or judge); pass replace=True to start it over, or give this one another name")
        return stored.value, contestants, values, None
    spec = CompareSpec(compare_id=uuid.uuid4().hex, name=name, contestants=members,
                       output=model_path(output) if output else None, total=len(prompts),
                       fingerprint=fingerprint, judge=judge_spec, created_at=time.time())
    ops: list[Any] = [COMPARE.put_op(runtime_id, spec, name)]
    if stored is not None:
        ops.insert(0, Delete(kind=VERDICT.name, scope=stored.value.compare_id, key=None))
    store.write_records(ops, agent_id=source.id, token=token)
    return spec, contestants, values, None if stored is None else stored.value.compare_id


def _check_agents(services: Any, agents: Any) -> list[RowAgent]:
    if isinstance(agents, (str, bytes)) or not hasattr(agents, "__iter__"):
        raise ConfigError(f"agents must be a list of agents, such as agents=[a, b], not {agents!r}")
    found = list(agents)
    if not found:
        raise ConfigError("rt.compare() got no agents: give two or more, such as agents=[a, b]")
    names: set[str] = set()
    for agent in found:
        if not isinstance(agent, RowAgent):
            raise ConfigError(f"rt.compare() compares agents (rt.spawn(...) or agent.fork(...)), "
                              f"not {type(agent).__name__}: {agent!r}")
        if agent.services is not services:
            raise ConfigError(f"agent '{agent.name}' belongs to another runtime "
                              f"('{agent.services.runtime_id}'); compare agents of this runtime")
        if agent.name in names:
            raise ConfigError(f"agent '{agent.name}' is named twice: compare different agents (fork one "
                              "with another prompt or model: agent.fork('name'))")
        names.add(agent.name)
    return found


def _check_judge(services: Any, judge: Any,
                 judge_output: type[BaseModel] | None) -> Literal["agent", "function"] | None:
    if judge_output is not None and not (isinstance(judge_output, type) and issubclass(judge_output, BaseModel)):
        raise ConfigError(f"judge_output must be a pydantic model class, not {judge_output!r}")
    if judge is None:
        if judge_output is not None:
            raise ConfigError("judge_output is what a judge agent answers with: give judge= an agent too")
        return None
    if isinstance(judge, RowAgent):
        if judge.services is not services:
            raise ConfigError(f"the judge agent '{judge.name}' belongs to another runtime "
                              f"('{judge.services.runtime_id}'); judge with an agent of this runtime")
        return "agent"
    if isinstance(judge, type) or not callable(judge):
        raise ConfigError(
            f"judge must be None, a function judge(row, outputs) returning a verdict, or an agent; "
            f"not {judge!r}")
    if judge_output is not None:
        raise ConfigError("judge_output is what a judge agent answers with; a judge function returns "
                          "its verdict itself")
    return "function"


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _too_long(name: str, agent: str) -> str:
    return (f"the job name of comparison '{name}' for '{agent}' ({JOB_NAME_RULE}; a shorter "
            "comparison name=... makes it fit):")


def _answer_text(answer: Any) -> str:
    return answer.model_dump_json() if isinstance(answer, BaseModel) else str(answer)


def _jsonable(verdict: Any) -> Any:
    if isinstance(verdict, BaseModel):
        return verdict.model_dump(mode="json")
    return to_jsonable_python(verdict, fallback=str)


def _verdict_columns(verdict: Any) -> dict[str, Any]:
    if isinstance(verdict, dict):
        return {f"judge_{k}": v for k, v in verdict.items()}
    return {"judge": verdict}


def _judge_columns(verdicts: dict[int, dict[str, Any]]) -> list[str]:
    columns: dict[str, None] = {}
    for found in verdicts.values():
        columns.update(dict.fromkeys(found))
    return list(columns)
