"""Batch jobs: an agent over the rows of a DataFrame, durably.

    job = agent.map(df, prompt="Classify: {text}", output=Label, concurrency=16,
                    max_cost_usd=5.0, name="reviews")
    await job.wait()
    job.results()                     # a DataFrame, in input order

    cmp = rt.compare(df, agents=[a, b], prompt="Classify: {text}", output=Label, judge=None)
    await cmp.wait()
    cmp.results()                     # side by side: a_label, b_label, agree, judge ...

Each row runs as its own fork of the agent (`_job.py`), the job and its rows are
records in the store (`_records.py`), one limiter paces the whole job
(`_limiter.py`), and the extension (`_extension.py`, one of
`default_extensions()`) goes on with running jobs when their agent is resumed. A
comparison (`_compare.py`) is one job per agent and an optional judge.
On Postgres, workers on any host (`_worker.py`, `python -m mentra_nb worker`)
run rows of the same jobs beside the notebook.
"""

from mentra_nb.runtime.batch._compare import Comparison, Judge, Verdict, judge_prompt
from mentra_nb.runtime.batch._extension import BatchExtension, compare_rows, map_rows
from mentra_nb.runtime.batch._extension import jobs_of as jobs
from mentra_nb.runtime.batch._job import BatchJob, JobProgress
from mentra_nb.runtime.batch._map import JOB_NAME_RULE, Prompt
from mentra_nb.runtime.batch._records import (
    COMPARE,
    JOB,
    ROW,
    VERDICT,
    CompareSpec,
    Contestant,
    JobSpec,
    JobState,
    JudgeSpec,
    RowState,
    VerdictRecord,
)
from mentra_nb.runtime.batch._worker import Worker

__all__ = [
    "COMPARE",
    "JOB",
    "JOB_NAME_RULE",
    "ROW",
    "VERDICT",
    "BatchExtension",
    "BatchJob",
    "CompareSpec",
    "Comparison",
    "Contestant",
    "JobProgress",
    "JobSpec",
    "JobState",
    "Judge",
    "JudgeSpec",
    "Prompt",
    "RowState",
    "Verdict",
    "VerdictRecord",
    "Worker",
    "compare_rows",
    "jobs",
    "judge_prompt",
    "map_rows",
]

