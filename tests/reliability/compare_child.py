"""The process the comparison crash test kills: 150 rows through two agents with a
judge function, started or resumed, until SIGKILL or the comparison's end.

    python -m tests.reliability.compare_child DB

Each run resumes the runtime (which goes on with the stored comparison's jobs) and
calls `rt.compare` with the same rows, agents and judge, as a rerun notebook cell
would (it attaches, and brings the judge function, which cannot be stored). It prints:

    READY <comparison id>       the comparison is in place; the test may kill from now on
    PROGRESS <n>                at least n (row, agent) pairs are done (read from the file)
    ALLDONE                     the comparison finished, every row judged
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from pydantic import BaseModel

from mentra_nb.providers.test import TestProvider
from mentra_nb.runtime import Runtime
from mentra_nb.runtime.batch import ROW, Comparison, compare_rows
from mentra_nb.store.records import DONE
from mentra_nb.store.sqlite import SqliteStore

ROWS = 150
AGENTS = ("a", "b")


class Label(BaseModel):
    label: str
    confidence: int


def rows() -> list[dict[str, object]]:
    return [{"i": i, "text": f"review number {i}"} for i in range(ROWS)]


def judge(row: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    return {"row": row["i"], "agree": outputs["a"] == outputs["b"]}


async def main(db: str) -> None:
    store = SqliteStore(db)
    # A small delay per streamed word keeps rows in flight when the kill lands.
    rt = Runtime.empty(store=store, providers=[TestProvider(chunk_delay=0.001)], runtime_id="cmp")
    leads = {a.name: a for a in rt.resume()}
    agents = [leads.get(name) or rt.spawn(name, "test") for name in AGENTS]
    cmp: Comparison = compare_rows(rt, rows(), agents, "Classify row {i}: {text}", output=Label,
                                   judge=judge, concurrency=8, name="cmp")
    print("READY", cmp.id, flush=True)
    waiter = asyncio.ensure_future(cmp.wait())
    while not waiter.done():
        done = sum(ROW.count(store, job.id, state=DONE) for job in cmp.jobs.values())
        print("PROGRESS", done, flush=True)
        await asyncio.wait([waiter], timeout=0.01)
    await waiter
    print("ALLDONE", cmp.state, flush=True)
    await rt.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
