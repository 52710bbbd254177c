"""Shared pieces of the reliability suite: child processes that are always killed
and reaped, seeds that print on failure, and read-only looks at a state file."""

from __future__ import annotations

import hashlib
import os
import queue
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.reliability


def crash_seeds() -> list[int]:
    """30 seeds in CI; MENTRA_CRASH_ITERATIONS=300 for the long run; MENTRA_CRASH_SEED=N
    starts from N (a failure's test id names its seed: rerun it with
    MENTRA_CRASH_SEED=<seed> MENTRA_CRASH_ITERATIONS=1)."""
    count = int(os.environ.get("MENTRA_CRASH_ITERATIONS", "30"))
    base = os.environ.get("MENTRA_CRASH_SEED")
    start = int(base) if base else random.SystemRandom().randrange(10**6)
    return [start + i for i in range(count)]


class Child:
    """A `python -m MODULE ARGS...` process whose stdout lines are collected by a
    reader thread (a buffered readline can sit on lines a select() waits for)."""

    def __init__(self, module: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, *args], cwd=REPO, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            self._queue.put(line.rstrip("\n"))

    def wait_for(self, prefix: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line.startswith(prefix):
                return line
        self.kill()
        stderr = self.proc.stderr.read() if self.proc.stderr else ""
        raise AssertionError(f"child never printed {prefix!r}; stderr:\n{stderr[-3000:]}")

    def kill(self) -> None:
        """SIGKILL, reap, and wait until every line it wrote has been read."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=10)

    def close(self) -> None:
        self.kill()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def children() -> Iterator[list[Child]]:
    """Every child a test starts is killed and reaped, pass or fail."""
    started: list[Child] = []
    yield started
    for child in started:
        child.close()


def integrity(db: Path) -> str:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def file_digest(path: Path) -> str | None:
    """SHA-256 of a file's bytes (None if absent): 'never a changed file'."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def digests(db: Path) -> dict[str, str | None]:
    """The store file and its WAL/journal side files."""
    return {suffix: file_digest(db.with_name(db.name + suffix)) for suffix in ("", "-wal", "-journal")}
