"""Batch jobs (`agent.map`) on the offline `test` model over a real SQLite file:
results, forks, attaching, bad input, pause / cancel / retry_failed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pandas as pd
import pytest
from pydantic import BaseModel

from mentra_nb.errors import ConfigError, InvalidRequest
from mentra_nb.messages import Role
from mentra_nb.providers.base import ProviderRequest
from mentra_nb.providers.events import ProviderEvent
from mentra_nb.providers.test import TestProvider
from mentra_nb.runtime import Runtime
from mentra_nb.runtime.batch import JOB, ROW, BatchJob, jobs
from mentra_nb.runtime.batch._records import TOTALS
from mentra_nb.store.records import Delete, RecordTally, StoredRecord
from mentra_nb.store.sqlite import SqliteStore


class Label(BaseModel):
    label: str
    stars: int
    spam: bool


class Flaky(TestProvider):
    """The test model, refusing prompts that contain `refuse` (until told otherwise)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.refuse: str | None = None

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        last = request.messages[-1]
        if self.refuse is not None and self.refuse in last.text:
            raise InvalidRequest(f"the server refused {last.text!r}", status_code=400)
        async for event in super().stream(request):
            yield event


@pytest.fixture
async def rt(tmp_path: Path) -> AsyncIterator[Runtime]:
    store = SqliteStore(tmp_path / "nb.sqlite")
    runtime = Runtime.empty(store=store, providers=[Flaky()], runtime_id="nb")
    yield runtime
    await runtime.aclose()
    store.close()


async def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.01)


REVIEWS = pd.DataFrame({"text": ["great", "awful", "fine", "meh", "superb"], "id": [10, 11, 12, 13, 14]})


def agent_id(rt: Runtime, name: str) -> str:
    return next(r.id for r in rt.list_persisted_agents() if r.name == name)


async def test_results_are_a_typed_dataframe_in_input_order(rt: Runtime) -> None:
    agent = rt.spawn("clf", "test")
    job = await agent.map(REVIEWS, prompt="Classify review {id}: {text}", output=Label,
                          concurrency=3, name="reviews").wait()
    frame = job.results()
    assert list(frame.columns) == ["label", "stars", "spam", "status", "error", "input_tokens",
                                   "output_tokens", "cost_usd", "agent"]
    assert list(frame["agent"]) == [f"reviews-{i}" for i in range(5)]
    assert list(frame["status"]) == ["done"] * 5
    assert str(frame["stars"].dtype) == "Int64" and str(frame["spam"].dtype) == "boolean"
    assert str(frame["cost_usd"].dtype) == "Float64" and list(frame["cost_usd"]) == [0.0] * 5
    assert (frame["input_tokens"] > 0).all() and (frame["output_tokens"] > 0).all()
    progress = job.progress()
    assert (progress.state, progress.done, progress.total, progress.waiting) == ("finished", 5, 5, 0)


async def test_each_row_is_a_fork_of_the_agents_history_as_it_was(rt: Runtime) -> None:
    agent = rt.spawn("clf", "test")
    await agent.send("You label reviews.")
    job = await agent.map([{"text": "great"}, {"text": "awful"}], prompt="Label: {text}",
                          name="forked").wait()
    await agent.send("Something after the job.")
    for i, text in enumerate(["great", "awful"]):
        fork = rt.resume_agent(agent_id(rt, f"forked-{i}"))
        assert fork.forked_from == agent.id and fork.fork_index == 2
        history = fork.history
        assert [m.text for m in history[:3]] == ["You label reviews.", agent.history[1].text, f"Label: {text}"]
        assert history[-1].role is Role.ASSISTANT
        assert job.results()["answer"][i] == history[-1].text


async def test_a_list_of_dicts_a_generator_and_a_prompt_function(rt: Runtime) -> None:
    agent = rt.spawn("clf", "test")
    listed = await agent.map([{"a": 1}, {"a": 2}], prompt=lambda row: f"n={row['a'] * 10}",
                             name="fn").wait()
    assert [rt.resume_agent(agent_id(rt, f"fn-{i}")).history[0].text for i in range(2)] == ["n=10", "n=20"]
    generated = await agent.map((x for x in ["x", "y", "z"]), prompt="say {row}", name="gen").wait()
    assert generated.progress().done == 3
    assert sorted(j.name for j in jobs(rt)) == ["fn", "gen"]
    assert listed.progress().done == 2


async def test_mapping_the_same_rows_again_attaches_and_replace_starts_over(rt: Runtime) -> None:
    agent = rt.spawn("clf", "test")
    first = await agent.map(REVIEWS, prompt="Classify: {text}", name="again").wait()
    before = {r.key: r for r in ROW.list(rt.store, first.id)}
    again = await agent.map(REVIEWS, prompt="Classify: {text}", name="again").wait()
    assert again is first
    assert {r.key: r for r in ROW.list(rt.store, first.id)} == before  # nothing ran again
    with pytest.raises(ConfigError, match="replace=True"):
        agent.map(REVIEWS.head(2), prompt="Classify: {text}", name="again")
    replaced = await agent.map(REVIEWS.head(2), prompt="Classify: {text}", name="again",
                               replace=True).wait()
    assert replaced.id != first.id and replaced.progress().done == 2
    assert ROW.count(rt.store, first.id) == 0
    # The old rows' forks were replaced by the new ones' (same names); the rest are the old job's.
    names = sorted(r.name for r in rt.list_persisted_agents() if r.forked_from == agent.id)
    assert names == [f"again-{i}" for i in range(5)]


async def test_a_replacing_job_is_the_one_stored_under_its_name_at_once(rt: Runtime) -> None:
    # The replaced job's handle once wrote its own spec back as it was told to stop,
    # so until the new job next wrote its own, the store named the old one (a crash then
    # would have resumed nothing, and a comparison attached to the old rows).
    agent = rt.spawn("clf", "test")
    first = await agent.map(REVIEWS, prompt="Classify: {text}", name="swap").wait()
    second = agent.map(REVIEWS.head(2), prompt="Classify: {text}", name="swap", replace=True)
    stored = JOB.get(rt.store, "nb", "swap")
    assert stored is not None and stored.value.job_id == second.id != first.id
    await second.wait()


async def test_row_forks_are_not_resumed_as_lead_agents(rt: Runtime, tmp_path: Path) -> None:
    agent = rt.spawn("clf", "test")
    await agent.map(REVIEWS, prompt="Classify: {text}", name="quiet").wait()
    await rt.aclose()
    store = SqliteStore(tmp_path / "nb.sqlite")
    again = Runtime.empty(store=store, providers=[Flaky()], runtime_id="nb")
    try:
        assert [a.name for a in again.resume()] == ["clf"]
        assert [j.name for j in jobs(again)] == []  # a finished job is not driven again
    finally:
        await again.aclose()
        store.close()


@pytest.mark.parametrize(("rows", "prompt", "kwargs", "message"), [
    ([{"text": "a"}], "Classify: {txt}", {}, r"names \{txt\}, which row 0 does not have \(its columns: text\)"),
    ([{"text": "a"}], "Classify: {text", {}, "not a valid template"),
    ([], "x {text}", {}, "got no rows"),
    ({"text": "a"}, "x {text}", {}, "takes many rows"),
    ([{"text": "a"}], "x {text}", {"concurrency": 0}, "concurrency must be"),
    ([{"text": "a"}], "x {text}", {"max_cost_usd": -1}, "max_cost_usd must be"),
    ([{"text": "a"}], "x {text}", {"name": "bad name"}, "job name 'bad name' is not allowed"),
    ([{"text": "a"}], "x {text}", {"output": dict}, "output must be a pydantic model class"),
])
async def test_bad_input_is_a_clear_error_and_stores_nothing(rt: Runtime, rows: object, prompt: str,
                                                            kwargs: dict[str, object], message: str) -> None:
    agent = rt.spawn("clf", "test")
    with pytest.raises(ConfigError, match=message):
        agent.map(rows, prompt=prompt, **kwargs)  # type: ignore[arg-type]
    assert jobs(rt) == [] and rt.store.read_records("batch.job") == []


async def test_a_failed_row_says_why_and_retry_failed_runs_it_again(rt: Runtime) -> None:
    provider = rt.providers.get("test")
    assert isinstance(provider, Flaky)
    provider.refuse = "awful"
    agent = rt.spawn("clf", "test")
    job = await agent.map(REVIEWS, prompt="Classify: {text}", name="flaky", concurrency=2).wait()
    frame = job.results()
    assert list(frame["status"]) == ["done", "failed", "done", "done", "done"]
    assert "the server refused 'Classify: awful'" in frame["error"][1]
    assert job.state == "finished" and job.progress().failed == 1
    provider.refuse = None
    assert job.retry_failed() == 1
    await job.wait()
    frame = job.results()
    assert list(frame["status"]) == ["done"] * 5 and frame["error"].isna().all()
    fork = rt.resume_agent(agent_id(rt, "flaky-1"))
    assert [m.role for m in fork.history] == [Role.USER, Role.ASSISTANT]  # a fresh fork, not the failed one


@pytest.fixture
async def slow(rt: Runtime) -> AsyncIterator[Runtime]:
    """A runtime on the same file whose model takes a while per row (rows stay in flight)."""
    runtime = Runtime.empty(store=rt.store, providers=[TestProvider(chunk_delay=0.01)], runtime_id="slow")
    yield runtime
    await runtime.aclose()


async def test_pause_stops_starting_rows_and_resume_goes_on(slow: Runtime) -> None:
    job = slow.spawn("clf", "test").map([{"n": i} for i in range(20)], prompt="count {n}",
                                        concurrency=1, name="p")
    await until(lambda: job.progress().done >= 2, "two rows done")
    job.pause()
    await job.wait()
    paused = job.progress()
    assert paused.state == "paused" and paused.running == 0
    assert 2 <= paused.done <= 3 and paused.waiting == 20 - paused.done
    await job.resume().wait()
    assert job.progress().done == 20 and job.state == "finished"


async def test_cancelling_a_paused_job_cancels_its_waiting_rows(slow: Runtime) -> None:
    job = slow.spawn("clf", "test").map([{"n": i} for i in range(10)], prompt="count {n}",
                                        concurrency=1, name="pc")
    await until(lambda: job.progress().done >= 1, "a row done")
    job.pause()
    await job.wait()
    job.cancel()
    cancelled = job.progress()
    assert cancelled.state == "cancelled" and cancelled.waiting == 0
    assert cancelled.done + cancelled.cancelled == 10


async def test_cancel_stops_the_job_and_keeps_what_was_done(slow: Runtime) -> None:
    agent = slow.spawn("clf", "test")
    job = agent.map([{"n": i} for i in range(20)], prompt="count {n}", concurrency=2, name="c")
    await until(lambda: job.progress().done >= 2, "two rows done")
    job.cancel()
    await job.wait()
    cancelled = job.progress()
    assert cancelled.state == "cancelled" and cancelled.running == 0 and cancelled.waiting == 0
    assert cancelled.done >= 2 and cancelled.done + cancelled.cancelled == 20
    assert job.retry_failed() == cancelled.cancelled
    await job.wait()
    assert job.progress().done == 20
    names = [r.name for r in slow.list_persisted_agents() if r.forked_from == agent.id]
    assert sorted(names) == sorted(f"c-{i}" for i in range(20))


def test_a_job_made_outside_an_event_loop_waits_to_be_started(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite")
    rt = Runtime.empty(store=store, runtime_id="sync")
    agent = rt.spawn("clf", "test")
    job = agent.map([{"t": "a"}, {"t": "b"}], prompt="{t}", name="later")
    assert isinstance(job, BatchJob) and job.progress().waiting == 2
    with pytest.raises(ConfigError, match="nothing runs it: in a notebook use %mentra map"):
        job.join(timeout=1)  # would wait forever

    async def finish() -> None:
        await job.wait()
        await rt.aclose()

    asyncio.run(finish())
    assert job.progress().done == 2
    store.close()


# --- progress from kept totals -------------------------------------------------------


def read_in_full(store: SqliteStore, job_id: str) -> dict[str, object]:
    """What progress() must say, from reading and adding up every row."""
    counts = {state: 0 for state in ("pending", "claimed", "done", "failed", "cancelled")}
    tokens_in = tokens_out = 0
    cost: float | None = 0.0
    for r in ROW.list(store, job_id):
        counts[r.state] += 1
        tokens_in += r.value.input_tokens
        tokens_out += r.value.output_tokens
        if r.state in ("done", "failed"):
            cost = None if cost is None or r.value.cost_usd is None else cost + r.value.cost_usd
    return {"waiting": counts["pending"], "running": counts["claimed"], "done": counts["done"],
            "failed": counts["failed"], "cancelled": counts["cancelled"], "input_tokens": tokens_in,
            "output_tokens": tokens_out, "cost_usd": cost}


def progress_numbers(job: BatchJob) -> dict[str, object]:
    p = job.progress()
    return {"waiting": p.waiting, "running": p.running, "done": p.done, "failed": p.failed,
            "cancelled": p.cancelled, "input_tokens": p.input_tokens, "output_tokens": p.output_tokens,
            "cost_usd": p.cost_usd}


async def test_progress_equals_a_full_read_at_every_point_with_failed_and_retried_rows(
        tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "p.sqlite")
    provider = Flaky(chunk_delay=0.002)
    provider.refuse = "bad"
    rt = Runtime.empty(store=store, providers=[provider], runtime_id="nb")
    seen: list[dict[str, object]] = []
    mismatches: list[tuple[dict[str, object], dict[str, object]]] = []

    async def watch(job: BatchJob) -> None:
        while True:
            # Both on the loop with no await between: no row changes in between.
            got, expected = progress_numbers(job), read_in_full(store, job.id)
            seen.append(got)
            if got != expected:
                mismatches.append((got, expected))
            await asyncio.sleep(0.003)

    try:
        rows = [{"t": "bad" if i % 7 == 3 else "good", "i": i} for i in range(40)]
        job = rt.spawn("clf", "test").map(rows, prompt="{t} {i}", concurrency=4, name="watched")
        watcher = asyncio.ensure_future(watch(job))
        await job.wait()
        assert job.progress().failed == 6
        assert job.retry_failed() == 6  # refused again: failed twice, tokens of the second run
        await job.wait()
        provider.refuse = None
        assert job.retry_failed() == 6
        await job.wait()
        watcher.cancel()
        assert mismatches == []
        assert any(s["running"] > 0 for s in seen) and any(s["failed"] > 0 for s in seen)  # type: ignore[operator]
        final = progress_numbers(job)
        assert final == read_in_full(store, job.id) and final["done"] == 40
    finally:
        await rt.aclose()
        store.close()


class RowReads(SqliteStore):
    """A real SQLite store that notes which reads went over a kind's records."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.reads: list[str] = []

    def read_records(self, kind: str, **kwargs: object) -> list[StoredRecord]:  # type: ignore[override]
        self.reads.append(f"read {kind} {kwargs.get('state')}")
        return super().read_records(kind, **kwargs)  # type: ignore[arg-type]

    def tally_records(self, kind: str, **kwargs: object) -> dict[str, RecordTally]:  # type: ignore[override]
        self.reads.append(f"tally {kind}")
        return super().tally_records(kind, **kwargs)  # type: ignore[arg-type]


async def test_progress_and_attaching_to_a_finished_job_read_no_row(tmp_path: Path) -> None:
    store = RowReads(tmp_path / "r.sqlite")
    rt = Runtime.empty(store=store, providers=[Flaky()], runtime_id="nb")
    try:
        agent = rt.spawn("clf", "test")
        await agent.map(REVIEWS, prompt="Classify: {text}", name="counted").wait()
        store.reads.clear()
        job = jobs(rt)[0]
        numbers = progress_numbers(job)
        # Reopened as after a restart: its budget's spend comes from the totals too.
        reopened = BatchJob(job.source, job.spec, None)
        assert progress_numbers(reopened) == numbers == read_in_full(store, job.id)
        store.reads.clear()
        progress_numbers(job)
        progress_numbers(BatchJob(job.source, job.spec, None))
        assert numbers["done"] == 5 and store.reads
        assert [r for r in store.reads if r.startswith("tally") or r == "read batch.row None"] == []
    finally:
        await rt.aclose()
        store.close()


async def test_a_job_stored_before_totals_were_kept_opens_with_its_rows_added_up(
        tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "old.sqlite")
    provider = Flaky()
    provider.refuse = "awful"
    rt = Runtime.empty(store=store, providers=[provider], runtime_id="nb")
    agent = rt.spawn("clf", "test")
    job = await agent.map(REVIEWS, prompt="Classify: {text}", name="old").wait()
    expected = read_in_full(store, job.id)
    await rt.aclose()
    # As a file written before `batch.totals` existed holds it: rows and spec only.
    store.write_records([Delete(kind=TOTALS.name, scope=job.id, key=None)])
    rt = Runtime.empty(store=store, providers=[provider], runtime_id="nb")
    try:
        agent = rt.resume()[0]
        reopened = agent.map(REVIEWS, prompt="Classify: {text}", name="old")  # attaches
        assert reopened.id == job.id
        assert progress_numbers(reopened) == expected and expected["failed"] == 1
        provider.refuse = None
        assert reopened.retry_failed() == 1
        await reopened.wait()
        assert progress_numbers(reopened) == read_in_full(store, job.id)
        assert reopened.progress().done == 5
    finally:
        await rt.aclose()
        store.close()
