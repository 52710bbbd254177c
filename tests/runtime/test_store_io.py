"""`StoreIO`: a network store's writes are awaited off the runtime's loop, so one
agent waiting for its database holds only that agent, never the others; the
step still reaches the store before memory changes, and a cancel never leaves
memory and the store apart. On a real Postgres (a throwaway server)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from mentra_nb import AgentStatus, PostgresStore, Runtime, SqliteStore
from mentra_nb.providers.test import TestProvider
from mentra_nb.runtime._store_io import StoreIO
from mentra_nb.store.base import Store
from tests.conftest import wait_until


class HeldStore(PostgresStore):
    """Postgres whose `begin_run` for one agent waits until the test lets it go
    (30 s at most: long enough for any machine, and then the test fails)."""

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.held_agent: str | None = None
        self.gate = threading.Event()
        self.waiting = threading.Event()
        self.gave_up = False
        self.loop_threads: set[str] = set()

    def begin_run(self, agent_id: str, *args: Any, **kwargs: Any) -> None:
        self.loop_threads.add(threading.current_thread().name)
        if agent_id == self.held_agent:
            self.waiting.set()
            self.gave_up = not self.gate.wait(30)
        super().begin_run(agent_id, *args, **kwargs)


class WatchedStore(PostgresStore):
    """Postgres that notes each of its calls made on `loop_thread` (by name)."""

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.loop_thread: int | None = None
        self.on_loop: list[str] = []


def _noting(name: str) -> Any:
    method = getattr(PostgresStore, name)

    def noted(self: WatchedStore, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == self.loop_thread:
            self.on_loop.append(name)
        return method(self, *args, **kwargs)

    return noted


for _name in dir(Store):
    if not _name.startswith("_") and callable(getattr(Store, _name)) and _name != "close":
        setattr(WatchedStore, _name, _noting(_name))


def runtime(store: PostgresStore) -> Runtime:
    return Runtime.empty(store=store, providers=[TestProvider()])


async def test_an_agent_waiting_for_its_database_holds_no_other_agent(pg_dsn):
    store = HeldStore(pg_dsn)
    rt = runtime(store)
    try:
        held, free = rt.spawn("held", "test"), rt.spawn("free", "test")
        store.held_agent = held.id
        held_run = asyncio.create_task(held.send("hello"))
        await wait_until(store.waiting.is_set)
        # The held agent's step is not in the store, so memory has not changed.
        assert held.state.history_len == 0 and held.status == AgentStatus.idle()
        reply = await free.send("hi")  # the loop runs while the other agent waits
        assert reply.text and len(free.history) == 2
        store.gate.set()
        assert (await held_run).text and len(held.history) == 2
        assert not store.gave_up  # before StoreIO: the loop itself waited out the 30 s
        assert not any(name.startswith("MainThread") for name in store.loop_threads)
        assert [m.role.value for m in store.load_messages(held.id)] == ["user", "assistant"]
    finally:
        store.gate.set()
        await rt.aclose()
        store.close()


async def test_a_cancel_during_a_write_leaves_memory_and_the_store_agreeing(pg_dsn):
    store = HeldStore(pg_dsn)
    rt = runtime(store)
    try:
        agent = rt.spawn("writer", "test")
        store.held_agent = agent.id
        run = asyncio.create_task(agent.send("hello"))
        await wait_until(store.waiting.is_set)
        agent.cancel()
        await asyncio.sleep(0)  # the cancel reaches the run while its write is held
        store.gate.set()
        with pytest.raises(asyncio.CancelledError):
            await run
        stored = store.load_agent(agent.id)
        assert stored is not None and stored.run is None
        # The write started, so the run began and was then rolled back: in both places.
        assert stored.transcript == list(agent.state.transcript) == []
        assert stored.resumable_turn == agent.state.resumable_turn
        assert agent.state.resumable_turn is not None and agent.state.resumable_turn.text == "hello"
        assert stored.record.status == agent.status
    finally:
        store.gate.set()
        await rt.aclose()
        store.close()


async def test_a_run_makes_no_store_call_on_the_loop(pg_dsn):
    """Every store call of a run, its extensions' included (the team inbox's claim
    at each round, the member list its tools ask for, the settling and mail check
    after the run), is awaited off the loop."""
    store = WatchedStore(pg_dsn)
    rt = runtime(store)
    try:
        agent = rt.spawn("lead", "test")  # spawning is a plain call: not watched
        store.loop_thread = threading.get_ident()
        for text in ("one", "two"):
            assert (await agent.send(text)).text
        store.loop_thread = None
        assert store.on_loop == []
        assert len(store.load_messages(agent.id)) == 4
    finally:
        await rt.aclose()
        store.close()


async def test_a_batch_jobs_progress_is_read_off_the_loop(pg_dsn):
    """A progress view refreshes twice a second from the loop: on a network store its
    reads (the kept totals, the running rows, the failed rows) are awaited off it."""
    store = WatchedStore(pg_dsn)
    rt = runtime(store)
    try:
        job = await rt.spawn("clf", "test").map([{"t": "a"}, {"t": "b"}], prompt="{t}",
                                                name="watched").wait()
        assert job.reads_off_loop
        store.loop_thread = threading.get_ident()
        progress, failed = await job.read_progress(failures=10)
        store.loop_thread = None
        assert store.on_loop == []
        assert (progress.done, progress.failed, failed) == (2, 0, [])
        now = job.progress()
        assert (progress.input_tokens, progress.cost_usd) == (now.input_tokens, now.cost_usd)
    finally:
        await rt.aclose()
        store.close()


def test_a_local_store_is_called_on_the_loop(db_path):
    assert not StoreIO(SqliteStore(db_path)).off_loop
