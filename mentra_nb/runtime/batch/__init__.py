"""Batch jobs: an agent over the rows of a DataFrame, durably.

    job = agent.map(df, prompt="Classify: {text}", output=Label, concurrency=16,
                    max_cost_usd=5.0, name="reviews")
    await job.wait()
    job.results()                     # a DataFrame, in input order

Each row runs as its own fork of the agent (`_job.py`), the job and its rows are
records in the store (`_records.py`), one limiter paces the whole job
(`_limiter.py`), and the extension (`_extension.py`, one of
`default_extensions()`) goes on with running jobs when their agent is resumed.
On Postgres, workers on any host (`_worker.py`, `python -m mentra_nb worker`)
run rows of the same jobs beside the notebook.
"""

from mentra_nb.runtime.batch._extension import BatchExtension, map_rows
from mentra_nb.runtime.batch._extension import jobs_of as jobs
from mentra_nb.runtime.batch._job import BatchJob, JobProgress
from mentra_nb.runtime.batch._map import JOB_NAME_RULE, Prompt
from mentra_nb.runtime.batch._records import JOB, ROW, JobSpec, JobState, RowState
from mentra_nb.runtime.batch._worker import Worker

__all__ = [
    "JOB",
    "JOB_NAME_RULE",
    "ROW",
    "BatchExtension",
    "BatchJob",
    "JobProgress",
    "JobSpec",
    "JobState",
    "Prompt",
    "RowState",
    "Worker",
    "jobs",
    "map_rows",
]

