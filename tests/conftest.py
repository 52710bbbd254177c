"""Shared fixtures: real SQLite files in a temporary folder, child processes and
kernels that are stopped whatever happens, and small waits."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn, TypeVar

import pytest

from mentra_nb import AgentSnapshot, AgentStatus, SqliteStore
from tests.children import Child
from tests.installed_wheel import install_wheel
from tests.kernels import Kernel
from tests.postgres import PgBouncer, PostgresServer, find_binaries


def pytest_addoption(parser: pytest.Parser) -> None:
    # `pytest tests/browser/test_native_look.py -k streaming --docs-screenshots` regenerates the
    # docs' screenshots (docs/images/, light and dark) from the browser test that takes them.
    parser.addoption("--docs-screenshots", action="store_true",
                     help="also write the docs' screenshots into docs/images/")


def pytest_unconfigure(config: pytest.Config) -> None:
    # llama-cpp-python opens two module-level /dev/null files it never closes; left to
    # the interpreter's teardown they print ResourceWarnings (past any warning filter)
    # after pytest's summary line, which must stay the last thing a run prints. Once the
    # models are collected nothing writes to them, so they are closed here.
    utils = sys.modules.get("llama_cpp._utils")
    if utils is not None:
        gc.collect()
        for name in ("outnull_file", "errnull_file"):
            getattr(utils, name).close()


_Server = TypeVar("_Server", PostgresServer, PgBouncer)


def missing(message: str) -> NoReturn:
    """A test's tool or server is not installed: skip here, but fail under CI, which
    must install everything the suite needs (a skip there would hide a missing step)."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def children():
    """Every `Child` a test appends here is killed and reaped, pass or fail."""
    started: list[Child] = []
    yield started
    for child in started:
        child.close()


@pytest.fixture
def kernels(tmp_path: Path):
    """`kernels()` starts a real kernel in `tmp_path` (`kernels(python=...)` with another
    interpreter); each is shut down, pass or fail."""
    started: list[Kernel] = []

    def start(python: str | None = None) -> Kernel:
        started.append(Kernel(tmp_path, python))
        return started[-1]

    yield start
    for kernel in started:
        kernel.close()


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh venv holding the wheel (with JupyterLab and Notebook 7, for the
    browser tests)."""
    return install_wheel(tmp_path_factory.mktemp("wheel"), extras=["jupyterlab", "notebook>=7"])


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory):
    """One throwaway Postgres for the session (stopped even when tests fail), or a
    skip (a failure under CI) where no server binaries are installed."""
    if find_binaries() is None:
        missing("no Postgres server binaries (initdb, pg_ctl): apt-get install postgresql")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing("psycopg is not installed: pip install -e '.[postgres]'")
    # A short path: the unix socket's path must fit in 107 bytes.
    yield from _throwaway("mentra-pg-", lambda folder: PostgresServer.start(folder / "pg"),
                          "a throwaway Postgres")


@pytest.fixture
def pg_dsn(postgres_server: PostgresServer) -> str:
    """The DSN of a fresh, empty database on the session's server."""
    return postgres_server.create_database()


@pytest.fixture(scope="session")
def pgbouncer(postgres_server: PostgresServer):
    """Debian's PgBouncer in transaction mode in front of the session's Postgres
    (stopped even when tests fail), or a skip (a failure under CI) where it is missing."""
    if not (shutil.which("pgbouncer") or Path("/usr/sbin/pgbouncer").exists()):
        missing("no pgbouncer: apt-get install pgbouncer")
    yield from _throwaway("mentra-pgb-", lambda folder: PgBouncer.start(folder, postgres_server),
                          "PgBouncer")


def _throwaway(prefix: str, start: Callable[[Path], _Server], what: str) -> Iterator[_Server]:
    """A server started in a new temporary folder, stopped and its folder removed
    whatever happens; a skip (a failure under CI) when it cannot start."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        server = start(folder)
    except (OSError, RuntimeError, subprocess.SubprocessError) as err:
        shutil.rmtree(folder, ignore_errors=True)
        missing(f"could not start {what}: {err}")
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pgbouncer_dsn(pgbouncer: PgBouncer) -> str:
    """A fresh, empty database reached through PgBouncer in transaction mode, with the
    server itself as the store's `listen_url` (LISTEN needs a session)."""
    database = pgbouncer.server.create_database().rsplit("/", 1)[1]
    return pgbouncer.dsn(database, listen_at_the_server=True)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "analysis.mentra.sqlite"


@pytest.fixture
def store(db_path: Path):
    s = SqliteStore(db_path)
    yield s
    s.close()


def clear_leases(path: Path) -> None:
    """What spec/000's tests do to simulate that the old process is gone."""
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM leases")
    conn.commit()
    conn.close()


# How long a wait gives a condition: generous, for a slow machine or one busy with
# other work (a wait returns as soon as its condition holds, so a fast one pays nothing).
WAIT_LIMIT = 30.0  # seconds


def until(predicate: Callable[[], bool], timeout: float = WAIT_LIMIT) -> None:
    """Wait from a test's own thread (the runtime runs on a host thread)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for a condition")
        time.sleep(0.01)


async def wait_until(predicate: Callable[[], bool], timeout: float = WAIT_LIMIT) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("timed out waiting for a condition")
        await asyncio.sleep(0.005)


async def wait_for_status(watch, status: AgentStatus) -> AgentSnapshot:
    """Consume `agent.watch()` until a snapshot has `status`."""
    async with asyncio.timeout(WAIT_LIMIT):
        async for snapshot in watch:
            if snapshot.status == status:
                return snapshot
    raise AssertionError(f"watch ended before status {status}")
