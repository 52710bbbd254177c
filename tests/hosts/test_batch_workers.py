"""Workers (`python -m mentra_nb worker`) on a real throwaway Postgres, beside a job a
runtime started as a notebook does: real worker processes, one SIGKILLed mid-job
as if its host died (another `MENTRA_HOST_ID`, so it is taken over when its lease
expires, not because its pid is gone); every row ends with exactly one result and
one fork. Also: what a worker refuses (SQLite, a job whose tools it lacks), and a
worker stopped with SIGTERM queues its rows again at once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from mentra_nb.messages import Role
from mentra_nb.providers.test import TestProvider
from mentra_nb.runtime import Runtime
from mentra_nb.runtime.batch import JOB, ROW
from mentra_nb.store import PostgresStore
from mentra_nb.store.records import CLAIMED, DONE, PENDING
from tests.children import REPO
from tests.hosts.batch_worker_setup import Label, lookup

pytestmark = pytest.mark.process

TTL = 3.0  # seconds: a silent worker's rows go to the others this long after its last heartbeat
SETUP = "tests.hosts.batch_worker_setup"


class WorkerProcess:
    """`python -m mentra_nb worker ...`, its stderr in a file the test reads."""

    def __init__(self, folder: Path, *args: str, host: str | None = None) -> None:
        self.log = folder / f"worker-{time.monotonic_ns()}.log"
        env = {**os.environ}
        if host is not None:
            env["MENTRA_HOST_ID"] = host
        with self.log.open("w") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "mentra_nb", "worker", *args],
                                         cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, env=env)

    @property
    def output(self) -> str:
        return self.log.read_text()

    def wait_for_output(self, text: str) -> None:
        wait_until(lambda: text in self.output or self.proc.poll() is not None, f"the worker to say {text!r}")
        assert text in self.output, self.output

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(*args: str, host: str | None = None) -> WorkerProcess:
        started.append(WorkerProcess(tmp_path, *args, host=host))
        return started[-1]

    yield start
    for worker in started:
        worker.kill()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


async def until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.05)


def worker_args(dsn: str, *more: str) -> list[str]:
    return ["--db", dsn, "--providers", SETUP, "--no-builtin-tools", "--lease-ttl", str(TTL), *more]


def rows(n: int) -> list[dict[str, object]]:
    return [{"i": i, "text": f"review number {i}"} for i in range(n)]


def claimed_by(store: PostgresStore, job_id: str, pid: int, state: str) -> list[int]:
    return [r.value.index for r in ROW.list(store, job_id, state=state)
            if r.claimed_by is not None and f"-{pid}-" in r.claimed_by]


async def test_two_workers_and_the_notebook_run_every_row_once_when_one_worker_is_killed(
        pg_dsn: str, workers: Callable[..., WorkerProcess]) -> None:
    total = 400
    store = PostgresStore(pg_dsn)
    # The notebook's runtime: its job starts at once, as `%mentra map` starts it. Its rows
    # and the doomed worker's are slow, so the job is far from done when both workers run.
    rt = Runtime.empty(store=store, providers=[TestProvider(chunk_delay=0.05)], runtime_id="nb",
                       lease_ttl=TTL)
    try:
        agent = rt.spawn("clf", "test")
        job = agent.map(rows(total), prompt="Classify row {i}: {text}", output=Label, name="job",
                        concurrency=1)
        doomed = workers(*worker_args(pg_dsn, "--concurrency", "2", "--providers", f"{SETUP}:SLOW"),
                         host="host-a")
        await until(lambda: claimed_by(store, job.id, doomed.proc.pid, DONE)
                    and claimed_by(store, job.id, doomed.proc.pid, CLAIMED), "the worker ran rows")
        other = workers(*worker_args(pg_dsn, "--concurrency", "4"))
        await until(lambda: claimed_by(store, job.id, other.proc.pid, CLAIMED)
                    or claimed_by(store, job.id, other.proc.pid, DONE), "the second worker ran rows")
        # Its host dies while it holds rows (it always holds some while rows wait).
        await until(lambda: claimed_by(store, job.id, doomed.proc.pid, CLAIMED), "the worker held rows")
        doomed.kill()
        lost = claimed_by(store, job.id, doomed.proc.pid, CLAIMED)
        done_by_doomed = {r.value.index: r for r in ROW.list(store, job.id, state=DONE)
                          if f"-{doomed.proc.pid}-" in (r.claimed_by or "")}
        await asyncio.wait_for(job.wait(), timeout=120)
        assert job.state == "finished"
        other.proc.send_signal(signal.SIGTERM)
        assert other.proc.wait(timeout=30) == 0, other.output
        assert "stopping" in other.output

        stored = ROW.list(store, job.id)
        assert sorted(r.value.index for r in stored) == list(range(total))
        assert all(r.state == DONE for r in stored)
        assert all(r.value.output == {"label": "a", "confidence": 0} for r in stored)
        by_index = {r.value.index: r for r in stored}
        for index in lost:
            # In flight when its worker died: taken over and run to its end elsewhere.
            assert f"-{doomed.proc.pid}-" not in (by_index[index].claimed_by or "")
        for index, record in done_by_doomed.items():
            assert by_index[index] == record  # a finished row never runs again
        runners = {r.claimed_by for r in stored}
        assert agent.id in runners  # the notebook's own share
        assert any(f"-{other.proc.pid}-" in (c or "") for c in runners)

        agents = store.list_agents("nb")
        forks = sorted((a for a in agents if a.forked_from == agent.id),
                       key=lambda a: int(a.name.rsplit("-", 1)[1]))
        assert [a.name for a in forks] == [f"job-{i}" for i in range(total)]  # one fork per row
        for fork in forks:
            persisted = store.load_agent(fork.id)
            assert persisted is not None and persisted.run is None
            index = int(fork.name.rsplit("-", 1)[1])
            users = [m.text for m in persisted.transcript if m.role is Role.USER]
            assert users == [f"Classify row {index}: review number {index}"]
            assert persisted.transcript[-1].role is Role.ASSISTANT
    finally:
        await rt.aclose()
        store.close()


async def test_a_cancel_in_the_notebook_stops_the_workers_rows_and_a_resumed_pause_takes_them_up_again(
        pg_dsn: str, workers: Callable[..., WorkerProcess]) -> None:
    store = PostgresStore(pg_dsn)
    rt = Runtime.empty(store=store, providers=[TestProvider(chunk_delay=0.05)], runtime_id="nb",
                       lease_ttl=TTL)
    try:
        agent = rt.spawn("clf", "test")
        job = agent.map(rows(200), prompt="Classify row {i}: {text}", output=Label, name="job",
                        concurrency=1)
        worker = workers(*worker_args(pg_dsn, "--concurrency", "3", "--providers", f"{SETUP}:SLOW"))
        await until(lambda: claimed_by(store, job.id, worker.proc.pid, CLAIMED), "the worker claimed rows")
        job.pause()
        await until(lambda: ROW.count(store, job.id, state=CLAIMED) == 0, "the running rows finished")
        job.resume()
        await until(lambda: claimed_by(store, job.id, worker.proc.pid, CLAIMED),
                    "the worker took the job up again")
        job.cancel()
        await asyncio.wait_for(job.wait(), timeout=60)
        await until(lambda: ROW.count(store, job.id, state=CLAIMED) == 0, "nothing left running")
        states = {r.state for r in ROW.list(store, job.id)}
        assert states <= {DONE, "cancelled"} and "cancelled" in states
        assert job.state == "cancelled"
        assert worker.proc.poll() is None  # it goes on, for other jobs
    finally:
        await rt.aclose()
        store.close()


def stop_between_transactions(dsn: str, pid: int) -> None:
    """SIGSTOP `pid` at a moment none of its connections is inside a transaction: one
    stopped holding a row lock would make the others wait for it instead of taking over
    (as a host cut off mid-commit does, until the server drops its connection)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            os.kill(pid, signal.SIGSTOP)
            busy = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND state <> 'idle'").fetchone()
            if busy is not None and busy[0] == 0:
                return
            os.kill(pid, signal.SIGCONT)
            time.sleep(0.01)


def test_a_stalled_worker_is_taken_over_and_its_late_results_are_refused(
        pg_dsn: str, workers: Callable[..., WorkerProcess]) -> None:
    """Stopped with SIGSTOP: alive (its pid exists) but silent, as a host behind a broken
    network is. Its rows go to the other worker; when it comes back, nothing it finished
    meanwhile lands, and it stops."""
    total = 40
    job_id = make_job(pg_dsn, total)
    stalled = workers(*worker_args(pg_dsn, "--concurrency", "3", "--providers", f"{SETUP}:SLOW"),
                      host="host-a")
    store = PostgresStore(pg_dsn)
    try:
        wait_until(lambda: claimed_by(store, job_id, stalled.proc.pid, CLAIMED), "the worker claimed rows")
        stop_between_transactions(pg_dsn, stalled.proc.pid)
        held = claimed_by(store, job_id, stalled.proc.pid, CLAIMED)
        other = workers(*worker_args(pg_dsn, "--concurrency", "4"))
        wait_until(lambda: ROW.count(store, job_id, state=DONE) == total, "the other worker ran every row")
        before = {r.value.index: r for r in ROW.list(store, job_id)}
        os.kill(stalled.proc.pid, signal.SIGCONT)
        assert stalled.proc.wait(timeout=60) == 1
        assert "its rows were taken over" in stalled.output
        after = {r.value.index: r for r in ROW.list(store, job_id)}
        assert after == before  # nothing of the stalled worker landed after the takeover
        for index in held:
            assert f"-{other.proc.pid}-" in (after[index].claimed_by or "")
        forks = [a.name for a in store.list_agents("nb") if a.forked_from is not None]
        assert sorted(forks) == sorted(f"job-{i}" for i in range(total))
    finally:
        store.close()


def make_job(dsn: str, total: int, *, with_tool: bool = False, output: type[BaseModel] = Label) -> str:
    """A job stored and left for workers: made outside an event loop, nothing in
    this process drives it (a notebook whose kernel went away)."""
    store = PostgresStore(dsn)
    try:
        rt = Runtime.empty(store=store, providers=[TestProvider()], runtime_id="nb",
                           tools=[lookup] if with_tool else [])
        agent = rt.spawn("clf", "test")
        job = agent.map(rows(total), prompt="Classify row {i}: {text}", output=output, name="job")
        asyncio.run(rt.aclose())
        return job.id
    finally:
        store.close()


def test_a_worker_runs_no_row_of_a_job_whose_tools_it_lacks_and_says_why(
        pg_dsn: str, workers: Callable[..., WorkerProcess]) -> None:
    job_id = make_job(pg_dsn, 5, with_tool=True)
    worker = workers(*worker_args(pg_dsn))
    worker.wait_for_output("not running job 'job'")
    assert "lacks lookup" in worker.output and "--tools" in worker.output
    store = PostgresStore(pg_dsn)
    try:
        assert [r.state for r in ROW.list(store, job_id)] == [PENDING] * 5
        # Given the tool, another worker runs them all.
        equipped = workers(*worker_args(pg_dsn, "--tools", SETUP))
        wait_until(lambda: ROW.count(store, job_id, state=DONE) == 5, "the equipped worker ran the rows")
        assert all(f"-{equipped.proc.pid}-" in (r.claimed_by or "") for r in ROW.list(store, job_id))
    finally:
        store.close()


def test_a_worker_leaves_a_job_whose_output_model_it_cannot_import(
        pg_dsn: str, workers: Callable[..., WorkerProcess]) -> None:
    class Verdict(BaseModel):  # as a class defined in a notebook cell: no module has it
        label: str

    job_id = make_job(pg_dsn, 3, output=Verdict)
    worker = workers(*worker_args(pg_dsn))
    worker.wait_for_output("not running job 'job'")
    assert "cannot import" in worker.output and "PYTHONPATH" in worker.output
    store = PostgresStore(pg_dsn)
    try:
        assert [r.state for r in ROW.list(store, job_id)] == [PENDING] * 3
        assert [a.name for a in store.list_agents("nb")] == ["clf"]  # not even a fork made
    finally:
        store.close()


def test_a_worker_stopped_with_sigterm_queues_its_rows_again_at_once(
        pg_dsn: str, workers: Callable[..., WorkerProcess]) -> None:
    job_id = make_job(pg_dsn, 40)
    worker = workers(*worker_args(pg_dsn, "--concurrency", "3", "--providers", f"{SETUP}:SLOW"))
    store = PostgresStore(pg_dsn)
    try:
        wait_until(lambda: ROW.count(store, job_id, state=CLAIMED) > 0, "the worker claimed rows")
        worker.proc.send_signal(signal.SIGTERM)
        assert worker.proc.wait(timeout=30) == 0, worker.output
        # Nothing is left claimed (no lease to wait for): the rows are waiting or done.
        states = [r.state for r in ROW.list(store, job_id)]
        assert CLAIMED not in states and set(states) <= {PENDING, DONE}
        assert "rows running here were queued again" in worker.output
        [spec] = JOB.list(store, "nb")
        assert spec.value.state == "running"  # the notebook's to change, not the worker's
    finally:
        store.close()


def test_a_worker_refuses_a_sqlite_store(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mentra_nb", "worker", "--db", str(tmp_path / "nb.sqlite")],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "Workers need Postgres" in done.stderr and "SQLite jobs run in the kernel" in done.stderr
    assert not (tmp_path / "nb.sqlite").exists()
