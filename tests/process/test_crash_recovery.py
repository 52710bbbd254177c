"""Recovery across a real process boundary: a child process is SIGKILLed in
each phase, and this process (which never had the file open) resumes it.
No leases are cleared by hand: the dead child's lease is taken over because
its process is gone."""

from __future__ import annotations

import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mentra_nb import (
    INTERRUPTED_TOOL_RESULT,
    AgentStatus,
    LeaseUnavailable,
    Message,
    Runtime,
    SqliteStore,
    ToolResultBlock,
)
from mentra_nb.testing import ScriptedProvider, text_stream

pytestmark = pytest.mark.process
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def child(db_path):
    """start(phase) -> (process, agent id); every child is killed and reaped at the end."""
    started: list[subprocess.Popen[str]] = []

    def start(phase: str) -> tuple[subprocess.Popen[str], str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.process.crash_child", str(db_path), phase],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        started.append(proc)
        return proc, _read_ready(proc)

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        proc.stderr.close()


def _read_ready(proc: subprocess.Popen[str], timeout: float = 30.0) -> str:
    # A reader thread, because a buffered readline can swallow several lines
    # while a select() on the pipe waits for bytes that already arrived.
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line.startswith("READY "):
            return line.split()[1]
    proc.kill()
    raise AssertionError(f"child never became ready; stderr:\n{proc.stderr.read()}")


def _kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _integrity(db_path: Path) -> str:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def _fresh_runtime(db_path: Path, *scripts) -> Runtime:
    return Runtime.empty(store=SqliteStore(db_path), runtime_id="crash",
                         providers=[ScriptedProvider("anthropic", list(scripts))])


async def test_killed_mid_stream_rolls_back_to_the_committed_turns(child, db_path):
    proc, agent_id = child("streaming")
    _kill(proc)
    assert _integrity(db_path) == "ok"

    rt = _fresh_runtime(db_path, text_stream("second answer"))
    before = rt.store.load_agent(agent_id)
    assert before.pending_turn.current_text == "Hel"
    [agent] = rt.resume()
    assert agent.id == agent_id
    assert agent.snapshot.status == AgentStatus.interrupted()
    assert agent.history == [Message.user("first"), Message.assistant("first answer")]
    assert agent.resumable_turn == Message.user("second")
    assert rt.store.load_agent(agent_id).pending_turn is None
    assert (await agent.resume()).text == "second answer"
    assert len(rt.store.load_agent(agent_id).transcript) == 4
    await rt.aclose()


async def test_killed_inside_a_tool_keeps_the_call_and_answers_it_with_an_error(child, db_path):
    proc, agent_id = child("tool")
    _kill(proc)
    assert _integrity(db_path) == "ok"

    rt = _fresh_runtime(db_path)
    [agent] = rt.resume()
    assert agent.snapshot.status == AgentStatus.interrupted()
    history = agent.history
    assert history[:3] == [Message.user("first"), Message.assistant("first answer"), Message.user("second")]
    assert history[3].tool_uses[0].name == "blocking_tool"
    assert history[4] == Message.user(
        ToolResultBlock(tool_use_id="tool-1", content=INTERRUPTED_TOOL_RESULT, is_error=True))
    assert rt.store.load_agent(agent_id).run is None
    await rt.aclose()


async def test_killed_while_idle_changes_nothing(child, db_path):
    proc, agent_id = child("idle")
    _kill(proc)
    rt = _fresh_runtime(db_path)
    [agent] = rt.resume()
    assert agent.snapshot.status == AgentStatus.finished()
    assert agent.history == [Message.user("first"), Message.assistant("first answer")]
    await rt.aclose()


async def test_a_second_process_gets_lease_unavailable_until_the_first_dies(child, db_path):
    proc, agent_id = child("idle")
    rt = _fresh_runtime(db_path)
    before = rt.store.load_agent(agent_id)
    with pytest.raises(LeaseUnavailable, match=f"pid {proc.pid} on .*Stop that kernel") as info:
        rt.resume()
    assert info.value.holder.pid == proc.pid
    assert rt.store.load_agent(agent_id) == before
    assert _integrity(db_path) == "ok"

    _kill(proc)
    [agent] = rt.resume()  # taken over at once: the holder's process is gone
    assert agent.id == agent_id
    assert rt.store.lease_holder(agent_id).pid == os.getpid()
    await rt.aclose()
