"""Child processes for the crash tests: started with `python -m MODULE`, their
stdout read line by line, and always killed and reaped (the `children` fixture
in tests/conftest.py closes every one a test starts, pass or fail).

The child side (the `*_child.py` scripts) shares the rest: `say` a line the
test waits for, `reach` the phase the test kills in, `stream_text` to start a
controlled reply, `blocking_tool`, and `until_killed`."""

from __future__ import annotations

import asyncio
import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from mentra_nb import ContentBlockDelta, ContentBlockStarted, MessageStarted, tool
from mentra_nb.testing import StreamControl

__all__ = ["REPO", "Child", "blocking_tool", "integrity", "reach", "say", "stream_text", "until_killed"]

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


# --- the child side ------------------------------------------------------------------


def say(line: str) -> None:
    """A line for the test (`Child.wait_for`), flushed: the test reads it while we run."""
    print(line, flush=True)


async def reach(condition: Callable[[], bool]) -> None:
    """Poll until the runtime is where the test wants to kill it (the test's
    `wait_for` bounds how long that may take)."""
    while not condition():
        await asyncio.sleep(0.001)


async def until_killed() -> None:
    await asyncio.Event().wait()


def stream_text(control: StreamControl, message_id: str, text: str) -> None:
    """Start a controlled reply with `text`, leaving it open (mid-stream)."""
    control.send(MessageStarted(id=message_id, model="model"))
    control.send(ContentBlockStarted.text(0))
    control.send(ContentBlockDelta.text(0, text))


@tool
async def blocking_tool(value: str) -> str:
    """Blocks until the process dies."""
    say("TOOL-STARTED")
    await until_killed()
    return "unreachable"
