"""Workers on Postgres: one job's rows run by two worker processes against one, on
a throwaway server, with a CPU-bound tool (each row calls it once: ~40 ms of
hashing), so one worker is held to one core by the GIL and a second one can
only help with a second core. Rows per second, and their ratio (the issue's
target: two workers at least 1.7x one).

The workers are started first and the job is made once they are listening (their
start-up is outside the timer); the job is made outside an event loop, so nothing
in this process runs its rows. The machine's load (its other users) is printed
beside the result: on a shared 2-core machine the ratio is bounded by the cores
that were free.

    python -m tests.benchmarks workers
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mentra_nb import tool
from mentra_nb.providers.test import TestProvider
from tests.benchmarks.report import Table, ratio

__all__ = ["PROVIDERS", "TOOLS", "run"]

ROWS = 240
CONCURRENCY = 4  # rows at once per worker
BURN = 40_000  # sha256 rounds per tool call


@tool
def crunch() -> str:
    """Crunch some numbers."""
    digest = b"mentra"
    for _ in range(BURN):
        digest = hashlib.sha256(digest).digest()
    return digest.hex()[:12]


TOOLS = [crunch]
PROVIDERS = [TestProvider()]
_THIS = "tests.benchmarks.bench_workers"
_REPO = Path(__file__).resolve().parents[2]


def _start_workers(dsn: str, count: int, folder: Path) -> list[tuple[subprocess.Popen[bytes], Path]]:
    started = []
    for i in range(count):
        log = folder / f"worker-{count}-{i}.log"
        with log.open("w") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "mentra_nb", "worker", "--db", dsn, "--tools", _THIS,
                 "--providers", _THIS, "--no-builtin-tools", "--concurrency", str(CONCURRENCY)],
                cwd=_REPO, stdout=subprocess.DEVNULL, stderr=err)
        started.append((proc, log))
    deadline = time.monotonic() + 60
    for proc, log in started:
        while "claiming rows" not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"a worker did not start:\n{log.read_text()}")
            time.sleep(0.05)
    return started


def _job(dsn: str) -> tuple[Any, str]:
    from mentra_nb.runtime import Runtime
    from mentra_nb.store import PostgresStore

    store = PostgresStore(dsn)
    rt = Runtime.empty(store=store, providers=PROVIDERS, tools=TOOLS, runtime_id="bench")
    agent = rt.spawn("cruncher", "test")
    job = agent.map([{"i": i} for i in range(ROWS)], prompt="Row {i}: crunch it", name="crunch")
    asyncio.run(rt.aclose())
    return store, job.id


def _measure(server: Any, count: int, folder: Path) -> tuple[float, float]:
    """(rows per second, load average while they ran) for `count` workers."""
    from mentra_nb.runtime.batch import ROW
    from mentra_nb.store.records import DONE

    dsn = server.create_database(f"workers{count}")
    workers = _start_workers(dsn, count, folder)
    try:
        started = time.perf_counter()
        store, job_id = _job(dsn)
        try:
            while ROW.count(store, job_id, state=DONE) < ROWS:
                if any(proc.poll() is not None for proc, _ in workers):
                    raise RuntimeError("a worker stopped:\n" + "\n".join(log.read_text() for _, log in workers))
                time.sleep(0.05)
            elapsed = time.perf_counter() - started
        finally:
            store.close()
        return ROWS / elapsed, os.getloadavg()[0]
    finally:
        for proc, _ in workers:
            proc.terminate()
        for proc, _ in workers:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def run() -> list[Table]:
    from tests.postgres import PostgresServer, find_binaries

    if find_binaries() is None:
        raise RuntimeError("no Postgres server binaries (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="mentra-bench-workers-"))
    server = PostgresServer.start(folder / "pg")
    try:
        load_before = os.getloadavg()[0]
        one, load_one = _measure(server, 1, folder)
        two, load_two = _measure(server, 2, folder)
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    table = Table(f"Workers on Postgres: {ROWS} rows, each calling a CPU-bound tool once "
                  f"({CONCURRENCY} rows at once per worker)",
                  ["workers", "rows/s", "vs one worker", "1-min load average after"])
    table.add("1", f"{one:.1f}", "1.00x", f"{load_one:.2f}")
    table.add("2", f"{two:.1f}", ratio(one, two), f"{load_two:.2f}")
    table.notes.append(f"target: two workers at least 1.7x one; {os.cpu_count()} cores, 1-min load "
                       f"average {load_before:.2f} before the runs (other processes share the cores)")
    return [table]
