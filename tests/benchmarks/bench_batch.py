"""A batch job against a bare loop: 10,000 rows on the offline `test` model at
concurrency 64, `agent.map(...)` (each row a fork, the job and every row durable in
SQLite) against a bare `asyncio.gather` over the same provider with a semaphore
(each row one `provider.stream` of the same request, nothing stored). Also the
state file's bytes per row after the job (its transcript, fork and records), and
the bytes written per row. And what one `job.progress()` (which a progress view asks
twice a second) costs on that 10,000-row job: counted by the store
(`ROW.tally`) against reading and decoding every row, as it did before.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tests.benchmarks.report import Table, io_written, ratio

__all__ = ["run"]

ROWS = 10_000
CONCURRENCY = 64
TARGET = 1.2  # the target: at most 1.2x the bare loop's wall time


class Label(BaseModel):
    label: str
    stars: int


# A second pair of rows gives the model the time a hosted one takes to answer, which
# is what a user's job waits on: the first pair measures our overhead alone.
SLOW_ROWS = 1_000
SLOW_MODEL_S = 0.5


def _rows(count: int = ROWS) -> list[dict[str, str]]:
    return [{"text": f"review number {i}: it works, mostly"} for i in range(count)]


def _provider(seconds_per_answer: float) -> Any:
    from mentra_nb.providers.test import TestProvider

    # One chunk per answer, so the delay is the whole answer's, not one per word.
    return TestProvider(chunk_delay=seconds_per_answer, chunk_size=10_000)


def _bare(rows: int = ROWS, seconds_per_answer: float = 0.0) -> float:
    from mentra_nb.messages import Message
    from mentra_nb.providers.base import OutputFormat, ProviderRequest
    from mentra_nb.providers.events import ContentBlockDelta
    provider = _provider(seconds_per_answer)
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
        answers = await asyncio.gather(*(one(r) for r in _rows(rows)))
        assert len(answers) == rows
        return time.perf_counter() - started

    return asyncio.run(go())


def _ours(db: Path, rows: int = ROWS, seconds_per_answer: float = 0.0) -> tuple[float, int, int]:
    from mentra_nb import Runtime, SqliteStore

    async def go() -> tuple[float, int]:
        store = SqliteStore(db)
        rt = Runtime.empty(store=store, runtime_id="bench", providers=[_provider(seconds_per_answer)])
        agent = rt.spawn("clf", "test")
        before = io_written()
        started = time.perf_counter()
        job = await agent.map(_rows(rows), prompt="Classify: {text}", output=Label,
                              concurrency=CONCURRENCY, name="bench").wait()
        seconds = time.perf_counter() - started
        written = io_written() - before
        assert job.progress().done == rows
        await rt.aclose()
        store.close()
        return seconds, written

    seconds, written = asyncio.run(go())
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    return seconds, size, written


PROGRESS_CALLS = 20


def _progress_by_reading(store: object, job_id: str) -> tuple[int, int, float | None]:
    """What `progress()` did before the store counted: read every row, decode, add up."""
    from mentra_nb.runtime.batch import ROW

    counts: dict[str, int] = {}
    tokens = 0
    cost: float | None = 0.0
    for r in ROW.list(store, job_id):  # type: ignore[arg-type]
        counts[r.state] = counts.get(r.state, 0) + 1
        tokens += r.value.input_tokens + r.value.output_tokens
        if r.state in ("done", "failed"):
            cost = None if cost is None or r.value.cost_usd is None else cost + r.value.cost_usd
    return counts.get("done", 0), tokens, cost


def _progress_by_tally(store: object, job_id: str) -> tuple[int, int, float | None]:
    """What `progress()` did next: the store counted by state and added up the payloads'
    tokens and cost in SQL (parsing every row's JSON)."""
    from mentra_nb.runtime.batch import ROW

    tally = ROW.tally(store, job_id, sums=("input_tokens", "output_tokens", "cost_usd"))  # type: ignore[arg-type]
    tokens = int(sum(t.sums["input_tokens"] + t.sums["output_tokens"] for t in tally.values()))
    finished = [tally[s] for s in ("done", "failed") if s in tally]
    priced = all(t.counted["cost_usd"] == t.count for t in finished)
    cost = sum(t.sums["cost_usd"] for t in finished) if priced else None
    return (tally["done"].count if "done" in tally else 0), tokens, cost


def _progress(db: Path) -> tuple[float, float, float]:
    """Seconds per progress read of the finished job: by reading every row, by the store's
    tally of every row, from the kept totals (what `progress()` reads now)."""
    from mentra_nb import Runtime, SqliteStore
    from mentra_nb.runtime.batch import jobs

    async def go() -> tuple[float, float, float]:
        store = SqliteStore(db)
        rt = Runtime.empty(store=store, runtime_id="bench")
        agent = rt.resume()[0]
        job = agent.map(_rows(), prompt="Classify: {text}", output=Label, concurrency=CONCURRENCY,
                        name="bench")  # attaches to the finished job
        assert jobs(rt) == [job]
        started = time.perf_counter()
        for _ in range(PROGRESS_CALLS):
            done, tokens, cost = _progress_by_reading(store, job.id)
        reading = (time.perf_counter() - started) / PROGRESS_CALLS
        started = time.perf_counter()
        for _ in range(PROGRESS_CALLS):
            by_tally = _progress_by_tally(store, job.id)
        tallied = (time.perf_counter() - started) / PROGRESS_CALLS
        started = time.perf_counter()
        for _ in range(PROGRESS_CALLS):
            p = job.progress()
        kept = (time.perf_counter() - started) / PROGRESS_CALLS
        # The same answer every way, or the timing means nothing.
        assert (p.done, p.input_tokens + p.output_tokens, p.cost_usd) == (done, tokens, cost) == by_tally
        await rt.aclose()
        store.close()
        return reading, tallied, kept

    return asyncio.run(go())


def run() -> list[Table]:
    bare = _bare()
    with tempfile.TemporaryDirectory() as folder:
        ours, size, written = _ours(Path(folder) / "batch.sqlite")
        reading, tallied, kept = _progress(Path(folder) / "batch.sqlite")
    slow_bare = _bare(SLOW_ROWS, SLOW_MODEL_S)
    with tempfile.TemporaryDirectory() as folder:
        slow_ours, _size, _written = _ours(Path(folder) / "batch.sqlite", SLOW_ROWS, SLOW_MODEL_S)
    table = Table(
        title=f"Batch job: {ROWS:,} rows, offline model, concurrency {CONCURRENCY}",
        columns=["", "wall time (s)", "rows/s", "vs bare loop", "state file bytes/row", "bytes written/row"],
    )
    table.add("bare asyncio.gather + semaphore", f"{bare:.2f}", f"{ROWS / bare:,.0f}", "1.00x", "-", "-")
    table.add("agent.map (durable, a fork per row)", f"{ours:.2f}", f"{ROWS / ours:,.0f}", ratio(bare, ours),
              f"{size / ROWS:,.0f}", f"{written / ROWS:,.0f}")
    table.notes.append(f"target: agent.map within {TARGET}x of the bare loop's wall time")
    table.notes.append("the bare loop stores nothing and forks nothing: it is the floor, not a peer")
    slow = Table(
        title=f"Batch job: {SLOW_ROWS:,} rows, a model that takes {SLOW_MODEL_S} s to answer, "
              f"concurrency {CONCURRENCY}",
        columns=["", "wall time (s)", "rows/s", "vs bare loop"],
    )
    slow.add("bare asyncio.gather + semaphore", f"{slow_bare:.2f}", f"{SLOW_ROWS / slow_bare:,.0f}", "1.00x")
    slow.add("agent.map (durable, a fork per row)", f"{slow_ours:.2f}", f"{SLOW_ROWS / slow_ours:,.0f}",
             ratio(slow_bare, slow_ours))
    slow.notes.append("the same two loops with the offline model made to take the time a hosted model "
                      "takes to answer: what a user's job waits on, where the first table measures "
                      "the durable machinery alone")
    progress = Table(title=f"job.progress() on a {ROWS:,}-row job (a progress view asks twice a second)",
                     columns=["", "ms per call", "vs reading every row"])
    progress.add("reading and decoding every row (before)", f"{reading * 1000:.1f}", "1.00x")
    progress.add("counted and added up by the store (ROW.tally, before)", f"{tallied * 1000:.2f}",
                 ratio(tallied, reading))
    progress.add("kept totals + running rows from the index (now)", f"{kept * 1000:.2f}",
                 ratio(kept, reading))
    progress.notes.append(f"mean of {PROGRESS_CALLS} calls each, on the same finished job, same answer; "
                          f"kept totals vs ROW.tally: {ratio(kept, tallied)}")
    return [table, slow, progress]
