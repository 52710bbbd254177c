"""Leases across hosts, on a real Postgres: a second host is refused while the
owner heartbeats, takes over once the heartbeat stops, and from then on every
write of the cut-off owner is refused; a killed owner's agent resumes on the
other host by the recovery matrix; a teammate whose lease outlives its lead's
is revived when that lease runs out, unless its holder heartbeats again.

The cut-off host is a child process stopped with SIGSTOP: alive (its pid
exists) but silent, as a host behind a broken network is."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import psycopg
import pytest

from mentra_nb import AgentStatus, LeaseUnavailable, Message, Runtime
from mentra_nb.store import PostgresStore
from mentra_nb.testing import ScriptedProvider, text_stream
from tests.hosts.host_child import RUNTIME_ID

pytestmark = pytest.mark.process

TTL = 1.5  # seconds: the child heartbeats every TTL/3


def host_b_runtime(dsn: str, *replies: str) -> tuple[Runtime, PostgresStore]:
    store = PostgresStore(dsn)
    provider = ScriptedProvider("host", [text_stream(r) for r in replies])
    return Runtime.empty(store=store, providers=[provider], runtime_id=RUNTIME_ID,
                         lease_ttl=TTL), store


async def take_over(rt: Runtime, agent_id: str, timeout: float = 60.0):
    """Resume `agent_id` on host-b as soon as its lease can be taken."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return rt.resume_agent(agent_id)
        except LeaseUnavailable:
            assert time.monotonic() < deadline, "the lease was never taken over"
            await asyncio.sleep(0.1)


async def test_a_second_host_is_refused_while_the_owner_heartbeats_and_told_who_holds_it(
    pg_dsn, host_b, start_host_a
):
    child = start_host_a(pg_dsn, "own", ttl=TTL)
    writer_id = child.ready()[0]
    rt, store = host_b_runtime(pg_dsn)
    try:
        # Several heartbeat periods: a live owner on another host keeps its agent.
        for _ in range(3):
            with pytest.raises(LeaseUnavailable, match="host-a") as refused:
                rt.resume_agent(writer_id)
            await asyncio.sleep(TTL / 2)
        assert "kernel host-a-kernel" in str(refused.value)
        assert refused.value.holder.host == "host-a"
    finally:
        await rt.aclose()
        store.close()


async def test_a_cut_off_owner_is_taken_over_and_every_later_write_of_it_is_refused(
    pg_dsn, host_b, start_host_a
):
    child = start_host_a(pg_dsn, "stream", ttl=TTL)
    writer_id = child.wait_for("STREAMING ").split()[1]
    os.kill(child.pid, signal.SIGSTOP)  # the host is cut off mid-stream
    rt, store = host_b_runtime(pg_dsn, "host-b was here")
    try:
        writer = await take_over(rt, writer_id)
        assert store.lease_holder(writer_id).host == "host-b"
        # The cut turn was rolled back by host-b's recovery, its prompt kept for a replay.
        assert writer.status == AgentStatus.interrupted()
        assert writer.history == []
        assert writer.resumable_turn == Message.user("write at length")
        reply = await writer.send("over to host b")
        assert reply.text == "host-b was here"
        ours = store.load_agent(writer_id)

        os.kill(child.pid, signal.SIGCONT)  # the network comes back
        lost = child.wait_for("LOST ")
        assert "no longer holds the lease" in lost and "host-b" in lost
        after = store.load_agent(writer_id)
        # Nothing of host-a's landed after the takeover: not a message, not a checkpoint.
        assert after.transcript == ours.transcript == [Message.user("over to host b"),
                                                       Message.assistant("host-b was here")]
        assert after.pending_turn is None and after.run is None
        assert after.record.status == ours.record.status
        assert store.lease_holder(writer_id).host == "host-b"
    finally:
        if child.proc.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
        await rt.aclose()
        store.close()


async def test_an_owner_killed_mid_stream_resumes_on_the_other_host_by_the_recovery_matrix(
    pg_dsn, host_b, start_host_a
):
    child = start_host_a(pg_dsn, "stream", ttl=TTL)
    writer_id = child.wait_for("STREAMING ").split()[1]
    watcher = PostgresStore(pg_dsn)
    # Wait for a checkpoint of the half-streamed reply, then kill the host.
    deadline = time.monotonic() + 30
    while (pending := watcher.load_agent(writer_id).pending_turn) is None or not pending.current_text:
        assert time.monotonic() < deadline, "the stream was never checkpointed"
        await asyncio.sleep(0.05)
    child.kill()
    rt, store = host_b_runtime(pg_dsn, "resumed on host b")
    try:
        # A dead owner on another host cannot be seen: it is taken over once its
        # heartbeat expires, not before.
        with pytest.raises(LeaseUnavailable):
            rt.resume_agent(writer_id)
        writer = await take_over(rt, writer_id)
        assert writer.status == AgentStatus.interrupted()
        assert writer.history == []  # streaming: rolled back to the run's start
        assert writer.resumable_turn == Message.user("write at length")
        loaded = store.load_agent(writer_id)
        assert loaded.pending_turn is None and loaded.run is None
        reply = await writer.resume()
        assert reply.text == "resumed on host b"
        assert [m.text for m in store.load_messages(writer_id)] == ["write at length",
                                                                    "resumed on host b"]
    finally:
        await rt.aclose()
        store.close()
        watcher.close()


# How long after the lead's lease the teammate's still runs: far longer than the few
# milliseconds the test takes to resume, so the resume always finds it held.
STAGGER = 4.0  # seconds


def last_heartbeats(dsn: str, *, mate_id: str) -> None:
    """Stagger a dead host's leases as its last moments can leave them: a lease taken
    after the host's last heartbeat (here the teammate's) outlives the others. The
    others ran out long ago; the teammate's runs out TTL + STAGGER from now."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE leases SET heartbeat_at = heartbeat_at - 60 WHERE agent_id <> %s",
                     (mate_id,))
        conn.execute("UPDATE leases SET heartbeat_at = extract(epoch FROM clock_timestamp()) + %s"
                     " WHERE agent_id = %s", (STAGGER, mate_id))


async def until(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} never happened"
        await asyncio.sleep(0.05)


async def test_a_teammate_whose_lease_outlives_its_leads_is_revived_when_that_lease_runs_out(
    pg_dsn, host_b, start_host_a
):
    child = start_host_a(pg_dsn, "own", ttl=TTL)
    _, lead_id, mate_id = child.ready()
    child.kill()
    last_heartbeats(pg_dsn, mate_id=mate_id)
    rt, store = host_b_runtime(pg_dsn, "mate is back")
    try:
        leads = rt.resume()
        assert {a.name for a in leads} == {"writer", "lead"}
        live = lambda: {a.id for a in rt.agents}  # noqa: E731
        assert mate_id not in live()  # host-a's lease on it has not run out yet
        await until(lambda: mate_id in live(), "the teammate's revival")
        assert store.lease_holder(mate_id).host == "host-b"
        # Revived as a working teammate: mail wakes it and it answers on host-b.
        rt.post("mate", "are you back?")
        await until(lambda: "mate is back" in [m.text for m in store.load_messages(mate_id)],
                    "the teammate's answer")
    finally:
        await rt.aclose()
        store.close()


async def test_a_teammate_whose_holder_heartbeats_again_is_left_to_it(
    pg_dsn, host_b, start_host_a, caplog
):
    child = start_host_a(pg_dsn, "own", ttl=TTL)
    _, lead_id, mate_id = child.ready()
    child.kill()
    last_heartbeats(pg_dsn, mate_id=mate_id)
    rt, store = host_b_runtime(pg_dsn)
    try:
        rt.resume()
        host_a_token = store.lease_holder(mate_id).token
        # host-a comes back to life (a network that heals) and heartbeats its teammate
        # again: host-b's retry finds a live holder and leaves the teammate to it.
        while "teammate mate of lead was not revived" not in caplog.text:
            store.renew_leases(host_a_token)
            await asyncio.sleep(TTL / 5)
            assert rt.agents and mate_id not in {a.id for a in rt.agents}
        assert store.lease_holder(mate_id).host == "host-a"
        assert "driven by another live runtime" in caplog.text
    finally:
        await rt.aclose()
        store.close()
