"""The process the batch crash test kills: a 500-row job on the offline `test`
model, started or resumed, until SIGKILL or the job's end.

    python -m tests.reliability.batch_child DB

Each run resumes the runtime (which goes on with a stored running job) and calls
`agent.map` with the same rows, as a rerun notebook cell would (it attaches).
It prints:

    READY <job id>              the job is in place; the test may kill from now on
    PROGRESS <n>                at least n rows are done (printed after reading the file)
    ALLDONE                     the job finished
"""

from __future__ import annotations

import asyncio
import sys

from pydantic import BaseModel

from mentra_nb.providers.test import TestProvider
from mentra_nb.runtime import Runtime
from mentra_nb.runtime.batch import ROW
from mentra_nb.store.records import DONE
from mentra_nb.store.sqlite import SqliteStore

ROWS = 500


class Label(BaseModel):
    label: str
    confidence: int


def rows() -> list[dict[str, object]]:
    return [{"i": i, "text": f"review number {i}"} for i in range(ROWS)]


async def main(db: str) -> None:
    store = SqliteStore(db)
    # A small delay per streamed word keeps rows in flight when the kill lands.
    rt = Runtime.empty(store=store, providers=[TestProvider(chunk_delay=0.001)], runtime_id="batch")
    leads = rt.resume()
    agent = leads[0] if leads else rt.spawn("clf", "test")
    job = agent.map(rows(), prompt="Classify row {i}: {text}", output=Label, name="job",
                    concurrency=16)
    print("READY", job.id, flush=True)
    waiter = asyncio.ensure_future(job.wait())
    while not waiter.done():
        print("PROGRESS", ROW.count(store, job.id, state=DONE), flush=True)
        await asyncio.wait([waiter], timeout=0.01)
    await waiter
    print("ALLDONE", job.state, flush=True)
    await rt.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
