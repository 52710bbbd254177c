"""A batch job against a bare loop: 10,000 rows on the offline `test` model at
concurrency 64, `agent.map(...)` (each row a fork, the job and every row durable in
SQLite) against a bare `asyncio.gather` over the same provider with a semaphore
(each row one `provider.stream` of the same request, nothing stored). Also the
state file's bytes per row after the job (its transcript, fork and records), and
the bytes written per row.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

from tests.benchmarks.report import Table, io_written, ratio

__all__ = ["run"]

ROWS = 10_000
CONCURRENCY = 64
TARGET = 1.2  # the target: at most 1.2x the bare loop's wall time


class Label(BaseModel):
    label: str
    stars: int


def _rows() -> list[dict[str, str]]:
    return [{"text": f"review number {i}: it works, mostly"} for i in range(ROWS)]


def _bare() -> float:
    from mentra_nb.messages import Message
    from mentra_nb.providers.base import OutputFormat, ProviderRequest
    from mentra_nb.providers.events import ContentBlockDelta
    from mentra_nb.providers.test import TestProvider

    provider = TestProvider()
    output = OutputFormat(name="Label", json_schema=Label.model_json_schema())

    async def go() -> float:
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(row: dict[str, str]) -> str:
            async with gate:
                request = ProviderRequest(model="default", messages=[Message.user(f"Classify: {row['text']}")],
                                          output=output)
                text = ""
                async for event in provider.stream(request):
                    if isinstance(event, ContentBlockDelta) and event.kind == "text":
                        text += event.value
                return Label.model_validate_json(text).label

        started = time.perf_counter()
        answers = await asyncio.gather(*(one(r) for r in _rows()))
        assert len(answers) == ROWS
        return time.perf_counter() - started

    return asyncio.run(go())


def _ours(db: Path) -> tuple[float, int, int]:
    from mentra_nb import Runtime, SqliteStore

    async def go() -> tuple[float, int]:
        store = SqliteStore(db)
        rt = Runtime.empty(store=store, runtime_id="bench")
        agent = rt.spawn("clf", "test")
        before = io_written()
        started = time.perf_counter()
        job = await agent.map(_rows(), prompt="Classify: {text}", output=Label,
                              concurrency=CONCURRENCY, name="bench").wait()
        seconds = time.perf_counter() - started
        written = io_written() - before
        assert job.progress().done == ROWS
        await rt.aclose()
        store.close()
        return seconds, written

    seconds, written = asyncio.run(go())
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    return seconds, size, written


def run() -> list[Table]:
    bare = _bare()
    with tempfile.TemporaryDirectory() as folder:
        ours, size, written = _ours(Path(folder) / "batch.sqlite")
    table = Table(
        title=f"Batch job: {ROWS:,} rows, offline model, concurrency {CONCURRENCY}",
        columns=["", "wall time (s)", "rows/s", "vs bare loop", "state file bytes/row", "bytes written/row"],
    )
    table.add("bare asyncio.gather + semaphore", f"{bare:.2f}", f"{ROWS / bare:,.0f}", "1.00x", "-", "-")
    table.add("agent.map (durable, a fork per row)", f"{ours:.2f}", f"{ROWS / ours:,.0f}", ratio(bare, ours),
              f"{size / ROWS:,.0f}", f"{written / ROWS:,.0f}")
    table.notes.append(f"target: agent.map within {TARGET}x of the bare loop's wall time")
    table.notes.append("the bare loop stores nothing and forks nothing: it is the floor, not a peer")
    return [table]
