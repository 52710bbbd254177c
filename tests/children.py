"""Child processes for the crash tests: started with `python -m MODULE`, their
stdout read line by line, and always killed and reaped (the `children` fixture
in tests/conftest.py closes every one a test starts, pass or fail)."""

from __future__ import annotations

import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

__all__ = ["REPO", "Child", "integrity"]

REPO = Path(__file__).resolve().parents[1]


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

    @property
    def pid(self) -> int:
        return self.proc.pid

    def ready(self, timeout: float = 30.0) -> list[str]:
        """The words after `READY` on the line the child prints once it is in place."""
        return self.wait_for("READY ", timeout).split()[1:]


def integrity(db: Path) -> str:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
