"""What a batch job keeps in the store: its spec (one `batch.job` record per job,
scope the runtime id, key the job's name) and one `batch.row` record per input row
(scope the job's id, key the row's index), queued through the store's records:

    waiting (PENDING) --claim--> running (CLAIMED) --> done | failed | cancelled
                 ^-------------- requeue (a crash, a 429, retry_failed) --'

A row's result is written in the same transaction that moves it out of CLAIMED, so
a row is counted once whatever happens around it.

A comparison (`rt.compare`) is one `batch.compare` record (scope the runtime id, key
its name) naming one ordinary job per agent, and, for a function judge, one
`batch.verdict` record per judged row (scope the comparison's id, key the row's index).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mentra_nb.runtime.tools import Tool
from mentra_nb.store.records import CLAIMED, DONE, PENDING, RecordKind

__all__ = [
    "CANCELLED",
    "CLAIMED",
    "COMPARE",
    "DONE",
    "FAILED",
    "JOB",
    "PENDING",
    "ROW",
    "TOTALS",
    "VERDICT",
    "CompareSpec",
    "Contestant",
    "JobSpec",
    "JobState",
    "JudgeSpec",
    "RowState",
    "RowTotals",
    "VerdictRecord",
    "row_key",
    "tool_fingerprints",
]

FAILED = "failed"
CANCELLED = "cancelled"

JobState = Literal["running", "paused", "cancelled", "finished", "budget"]
"""Where a job stands: driven (`running`), `paused`, `cancelled`, `finished`, or stopped
by its `budget`."""


class JobSpec(BaseModel):
    """A job as stored: everything a resumed runtime needs to go on with it."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    name: str
    agent_id: str  # the agent whose forks run the rows
    agent_name: str
    fork_index: int  # every row forks the agent's history at this many messages
    output: str | None = None  # the output model as "module:qualname", if any
    concurrency: int
    max_cost_usd: float | None = None
    total: int
    fingerprint: str  # of the rows' prompts and the output model: a rerun of the same cell matches
    state: JobState = "running"
    note: str = ""  # why the job stopped (a budget, a cancel), for people
    created_at: float
    # The tools the agent was offered when the job was made, name -> its `tool_fingerprints` hash:
    # a worker runs the job's rows only if its forks are offered exactly these (None: a
    # job stored before workers existed, which workers leave to the notebook).
    tools: dict[str, str] | None = None


class RowState(BaseModel):
    """One input row: its prompt (rendered when the job was created, so a resumed job
    needs no callable) and, once it ran, its result."""

    model_config = ConfigDict(frozen=True)

    index: int
    prompt: str
    agent_name: str  # the fork that runs (ran) it
    output: dict[str, Any] | None = None  # the typed answer's fields
    text: str | None = None  # the final answer's text
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    attempts: int = 0  # runs started (a crash's or a 429's rerun included)


JOB = RecordKind("batch.job", JobSpec)
"""A job's spec: scope the runtime id, key the job's name."""
ROW = RecordKind("batch.row", RowState)
"""One input row of a job: scope the job's id, key its index (`row_key`), queued
(pending, claimed) until it is done, failed or cancelled."""


class RowTotals(BaseModel):
    """What a job's rows add up to, or one share of it: each process that settles rows
    keeps its own share (a `batch.totals` record, key its claimer's id), written in the
    same transaction as the rows it changed, so a progress read adds up a few small
    records instead of every row (and workers never write the same record)."""

    model_config = ConfigDict(frozen=True)

    done: int = 0
    failed: int = 0
    cancelled: int = 0
    input_tokens: int = 0  # of every row, whatever its state (a retried row keeps its last run's)
    output_tokens: int = 0
    cost_usd: float = 0.0  # of the done and failed rows whose cost is known
    unpriced: int = 0  # done and failed rows of unknown cost (the total is then unknown)
    costliest: float | None = None  # the costliest row settled so far (never lowered by a retry)

    def plus(self, other: RowTotals) -> RowTotals:
        highest = [c for c in (self.costliest, other.costliest) if c is not None]
        return RowTotals(done=self.done + other.done, failed=self.failed + other.failed,
                         cancelled=self.cancelled + other.cancelled,
                         input_tokens=self.input_tokens + other.input_tokens,
                         output_tokens=self.output_tokens + other.output_tokens,
                         cost_usd=self.cost_usd + other.cost_usd,
                         unpriced=self.unpriced + other.unpriced,
                         costliest=max(highest) if highest else None)


TOTALS = RecordKind("batch.totals", RowTotals)
"""A share of a job's totals: scope the job's id, key the claimer whose writes it counts
("" for the rows as they were when the job was made, or first opened by this version)."""


class Contestant(BaseModel):
    """One agent of a comparison and the job that runs it over the rows."""

    model_config = ConfigDict(frozen=True)

    agent_id: str
    agent_name: str
    job_name: str


class JudgeSpec(BaseModel):
    """Who judges a comparison's rows: a function of this process (`kind="function"`,
    its verdicts are `batch.verdict` records) or an agent (`kind="agent"`, its verdicts
    are the results of its job `job_name`)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["function", "agent"]
    description: str  # the function's or the agent's name, for people
    agent_id: str | None = None
    job_name: str | None = None
    output: str | None = None  # the agent's verdict model as "module:qualname"


class CompareSpec(BaseModel):
    """A comparison as stored: its agents' jobs, its judge, and which rows the judge
    agent's job covers (rows every agent finished, in its order)."""

    model_config = ConfigDict(frozen=True)

    compare_id: str
    name: str
    contestants: list[Contestant]
    output: str | None = None
    total: int
    fingerprint: str  # of the rows' prompts, the output model, the agents and the judge
    judge: JudgeSpec | None = None
    judged: list[int] | None = None  # row indices of the judge agent's job, in its order
    state: Literal["running", "finished"] = "running"
    created_at: float


class VerdictRecord(BaseModel):
    """A function judge's verdict on one row (JSON), or why the function failed."""

    model_config = ConfigDict(frozen=True)

    index: int
    verdict: Any = None
    error: str | None = None


COMPARE = RecordKind("batch.compare", CompareSpec)
"""A comparison's spec: scope the runtime id, key its name."""
VERDICT = RecordKind("batch.verdict", VerdictRecord)
"""A function judge's verdict: scope the comparison's id, key the row's index (`row_key`)."""


def tool_fingerprints(tools: Iterable[Tool]) -> dict[str, str]:
    """What the model is shown of each tool (name, description, input schema), hashed:
    two processes whose tools have the same fingerprints offer the same tools."""
    found: dict[str, str] = {}
    for t in tools:
        shown = {"name": t.spec.name, "description": t.spec.description,
                 "input_schema": t.spec.input_schema}
        found[t.spec.name] = hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()[:16]
    return found


def row_key(index: int) -> str:
    """Keys sort as the rows do."""
    return f"{index:09d}"


__all__ += ["CLAIMED", "DONE", "PENDING"]
