"""Closing a busy runtime, or dropping it: teammates (one working, one idle) and
subagents (one waiting for approval, one streaming) are stopped, every lease is
released, and no task is left pending or destroyed pending (issue 16.5)."""

from __future__ import annotations

import asyncio
import gc
import logging
import sqlite3
import subprocess
import sys
import weakref

import pytest

from mentra_nb import AgentConfig, MentraError, Runtime, SqliteStore, TeamMemberStatus
from mentra_nb.runtime.subagents import list_subagents, pending_approvals, stored_tree
from mentra_nb.runtime.subagents import mail as subagent_mail
from mentra_nb.testing import ScriptedProvider, controlled_stream, text_stream
from tests.conftest import wait_until
from tests.subagents.helpers import RoutedProvider, call, start_text


def leases(db_path) -> int:
    with sqlite3.connect(db_path) as db:
        return db.execute("SELECT count(*) FROM leases").fetchone()[0]


def mentra_tasks() -> list[str]:
    return sorted(t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("mentra-"))


async def busy_runtime(db_path, tmp_path):
    """A lead with two teammates (alice mid-stream, bob idle) and two subagents
    (writer waiting for approval, reader mid-stream). Returns the runtime, the lead
    and the stream controls (keep them only as long as the test needs)."""
    reader_stream, reader_control = controlled_stream()
    alice_stream, alice_control = controlled_stream()
    provider = RoutedProvider(
        root=[call("s1", "spawn_agent", task_name="writer", message="Write", model="anthropic:writer"),
              call("s2", "spawn_agent", task_name="reader", message="Read", model="anthropic:reader"),
              text_stream("Both are working.")],
        writer=[call("c1", "write_file", path="out.txt", content="hello")],
        reader=[reader_stream],
    )
    team_provider = ScriptedProvider("team", [alice_stream])
    rt = Runtime(store=SqliteStore(db_path), providers=[provider, team_provider], workspace=tmp_path)
    lead = rt.spawn("lead", "anthropic:root", config=AgentConfig(subagents=True))
    await lead.spawn_teammate("alice", "researcher", "Dig in", model="team:m")
    await lead.spawn_teammate("bob", "reviewer")
    await lead.send("Delegate")
    await wait_until(lambda: pending_approvals(lead) != [] and provider.requests("reader"))
    start_text(reader_control, "Reading")
    await wait_until(lambda: team_provider.requests)
    start_text(alice_control, "Digging")
    await wait_until(lambda: lead.teammate("alice").snapshot.current_text == "Digging")
    assert leases(db_path) == 5  # lead, alice, bob, writer, reader
    assert {t.name: t.status for t in lead.teammates} == {
        "alice": TeamMemberStatus.working(), "bob": TeamMemberStatus.idle()}
    assert {i.name: i.status for i in list_subagents(lead)} == {"reader": "running", "writer": "running"}
    return rt, lead, (reader_control, alice_control)


@pytest.fixture
def asyncio_errors(caplog):
    """What asyncio reports (e.g. "Task was destroyed but it is pending!")."""
    caplog.set_level(logging.WARNING, logger="asyncio")
    yield lambda: [r.getMessage() for r in caplog.records if r.name == "asyncio"]


async def test_aclose_stops_teammates_and_subagents_and_releases_every_lease(db_path, tmp_path,
                                                                             asyncio_errors):
    rt, lead, _controls = await busy_runtime(db_path, tmp_path)

    await rt.aclose()

    assert leases(db_path) == 0
    assert mentra_tasks() == []
    gc.collect()
    assert asyncio_errors() == []
    # Every child was cut off: stored as interrupted, without notices for the parent.
    stored = stored_tree(rt.store, lead.id)
    assert {path: r["status"] for path, r in stored["agents"].items()} == {
        "/root/reader": "interrupted", "/root/writer": "interrupted"}
    assert subagent_mail.MAIL.pending(rt.store, lead.id) == []


async def dropped_busy_runtime(db_path, tmp_path) -> tuple[weakref.ref, str]:
    rt, lead, _controls = await busy_runtime(db_path, tmp_path)
    return weakref.ref(rt), lead.id  # everything else is dropped with this frame


async def test_a_dropped_runtime_is_closed_when_collected(db_path, tmp_path, asyncio_errors):
    runtime_ref, lead_id = await dropped_busy_runtime(db_path, tmp_path)
    gc.collect()

    assert runtime_ref() is None
    # Its tasks are cancelled and roll back on the loop, then the leases go.
    await wait_until(lambda: leases(db_path) == 0 and mentra_tasks() == [])
    gc.collect()
    await asyncio.sleep(0)
    assert asyncio_errors() == []

    # A new runtime takes the agents over at once; the cut children are interrupted.
    async with Runtime.empty(store=SqliteStore(db_path), providers=[RoutedProvider()]) as rt:
        [lead] = rt.resume()
        assert lead.id == lead_id
        assert {i.name: i.status for i in list_subagents(lead)} == {
            "reader": "interrupted", "writer": "interrupted"}


async def test_an_agent_whose_runtime_was_dropped_says_so(db_path):
    agent = Runtime.empty(store=SqliteStore(db_path), providers=[ScriptedProvider("anthropic")]).spawn(
        "writer", "anthropic:model")
    gc.collect()
    assert leases(db_path) == 0
    with pytest.raises(MentraError, match="was garbage collected, which closed it; keep a reference"):
        await agent.send("hello")


SCRIPT = """
import asyncio, sys
from mentra_nb import Runtime, SqliteStore

async def main():
    rt = Runtime.empty(store=SqliteStore(sys.argv[1]))
    writer = rt.spawn("writer", "test")
    lead = rt.spawn("lead", "test")
    await lead.spawn_teammate("alice", "researcher", "hello")  # still working when main returns
    print((await writer.send("hi")).text)

asyncio.run(main())
"""


def test_a_script_that_ends_while_a_teammate_works_leaves_no_lease(db_path):
    """The runtime is dropped as `main()` returns, inside the loop that asyncio.run
    then shuts down: its close must finish there, not on an iteration that never comes."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(db_path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hi\n"
    assert "Task was destroyed" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert leases(db_path) == 0
