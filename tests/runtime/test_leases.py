"""Leases from the runtime's side: heartbeat, release, re-acquire, fencing, scope."""

from __future__ import annotations

import asyncio
import os

import psutil
import pytest

from mentra_nb import (
    AgentNotFound,
    ContentBlockDelta,
    ContentBlockStarted,
    LeaseLost,
    LeaseUnavailable,
    MessageStarted,
    Runtime,
    SqliteStore,
)
from mentra_nb.testing import controlled_stream, text_stream
from tests.conftest import clear_leases, until, wait_until
from tests.runtimes import scripted_runtime as runtime


async def test_the_heartbeat_renews_leases_while_the_loop_runs(db_path):
    rt = runtime(db_path, lease_ttl=0.3)
    agent = rt.spawn("writer", "anthropic:model")
    first = rt.store.lease_holder(agent.id).heartbeat_at
    await wait_until(lambda: rt.store.lease_holder(agent.id).heartbeat_at > first)
    await rt.aclose()


async def test_aclose_releases_every_lease(db_path):
    rt = runtime(db_path)
    a = rt.spawn("a", "anthropic:model")
    b = rt.spawn("b", "anthropic:model")
    await rt.aclose()
    assert rt.store.lease_holder(a.id) is None and rt.store.lease_holder(b.id) is None


async def test_a_rerun_setup_cell_takes_its_own_agents_back(db_path):
    first = runtime(db_path, text_stream("late"))
    agent = first.spawn("writer", "anthropic:model")
    # Same process, same runtime id: the new Runtime object re-acquires at once...
    second = runtime(db_path, text_stream("fresh"))
    [again] = second.resume()
    assert (await again.send("hi")).text == "fresh"
    # ...and the old object is fenced out instead of overwriting the new one's work.
    with pytest.raises(LeaseLost, match="no longer holds the lease"):
        await agent.send("stale")
    assert len(second.store.load_agent(agent.id).transcript) == 2
    await first.aclose()
    assert second.store.lease_holder(agent.id).token == second._leases.token
    await second.aclose()


async def test_another_live_runtime_gets_lease_unavailable_naming_the_holder(db_path):
    owner = runtime(db_path, owner_label="kernel 1f2e")
    agent = owner.spawn("writer", "anthropic:model")
    intruder = runtime(db_path, runtime_id="other")
    with pytest.raises(LeaseUnavailable) as info:
        intruder.resume_agent(agent.id)
    message = str(info.value)
    assert f"runtime 'nb' in pid {os.getpid()}" in message and "(kernel 1f2e)" in message
    assert intruder.agents == []
    await owner.aclose()
    assert intruder.resume_agent(agent.id).id == agent.id
    await intruder.aclose()


async def test_resuming_an_unknown_agent_is_a_clear_error(db_path):
    rt = runtime(db_path)
    with pytest.raises(AgentNotFound, match="no agent with id nope"):
        rt.resume_agent("nope")
    await rt.aclose()


async def test_opening_a_runtime_fixes_up_only_its_own_agents(db_path):
    script_a, control_a = controlled_stream()
    crashed = runtime(db_path, script_a, runtime_id="a")
    victim = crashed.spawn("writer", "anthropic:model")
    send = asyncio.create_task(victim.send("hello"))
    for event in (MessageStarted(), ContentBlockStarted.text(0), ContentBlockDelta.text(0, "Hel")):
        control_a.send(event)
    await wait_until(lambda: victim.snapshot.current_text == "Hel")

    def checkpointed() -> bool:
        pending = crashed.store.load_agent(victim.id).pending_turn
        return pending is not None and pending.current_text == "Hel"

    await wait_until(checkpointed)  # the first checkpoint comes a second in
    clear_leases(db_path)

    neighbour = runtime(db_path, runtime_id="b")
    neighbour.spawn("other", "anthropic:model")
    assert neighbour.resume("b")[0].name == "other"
    untouched = neighbour.store.load_agent(victim.id)
    assert untouched.pending_turn.current_text == "Hel" and untouched.run is not None

    send.cancel()
    await asyncio.gather(send, return_exceptions=True)
    await neighbour.aclose()


@pytest.mark.process
def test_a_tool_blocking_the_loop_never_loses_the_lease_to_a_claimer(db_path, tmp_path, children):
    """Issue 14.3: the heartbeat runs in a thread a blocked loop cannot starve,
    and on this host a living owner keeps its agent however old its heartbeat;
    the tool that completed keeps its result and ran once."""
    from tests.children import Child

    child = Child("tests.runtime.lease_child", str(db_path), str(tmp_path))
    children.append(child)
    agent_id = child.wait_for("BLOCKING ").split()[1]
    watcher = SqliteStore(db_path)
    first = watcher.lease_holder(agent_id).heartbeat_at
    # The loop is blocked, yet the heartbeat goes on.
    until(lambda: watcher.lease_holder(agent_id).heartbeat_at > first)
    claimer = Runtime.empty(store=SqliteStore(db_path), runtime_id="claimer", lease_ttl=0.5)
    with pytest.raises(LeaseUnavailable, match=f"pid {child.pid}"):
        claimer.resume_agent(agent_id)
    (tmp_path / "go").touch()
    assert child.wait_for("DONE ") == "DONE done"
    assert child.proc.wait(timeout=30) == 0
    transcript = watcher.load_agent(agent_id).transcript
    assert [b.content for m in transcript for b in m.tool_results] == ["completed"]
    assert (tmp_path / "side_effects").read_text() == "ran\n"
    assert claimer.resume_agent(agent_id).status.name == "finished"  # the owner is gone now
    asyncio.run(claimer.aclose())
    watcher.close()


def test_a_start_time_read_a_second_apart_still_names_the_living_process():
    """Two processes compute a start time from /proc/stat's boot time, whole seconds
    from a slewed wall clock, so they may disagree by a second: that must never make a
    living owner look dead (its agents would be taken from it). A start time far off is
    another process that got the same pid."""
    from mentra_nb.store.sqlite import process_is_alive

    started = psutil.Process().create_time()
    assert process_is_alive(os.getpid(), started + 1.0)
    assert process_is_alive(os.getpid(), started - 1.0)
    assert not process_is_alive(os.getpid(), started + 60)
