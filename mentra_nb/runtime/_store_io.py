"""`StoreIO`: how code on the runtime's event loop waits for the store.

A store on a local disk answers in microseconds, so its calls run directly on
the loop (a thread hop would take longer than the write). A store across a network
(`PostgresStore`: `store.network` is true) answers in one or more round trips,
and while one agent waited for its database every agent's stream and every view
of the runtime froze. So for such a store a call runs on a thread of the
runtime's own (`THREADS`)
and the loop awaits it, free to stream the other agents meanwhile.

The guarantees of the direct calls are kept:
- A step is in the store before memory changes: the caller awaits the write,
  then changes memory. That agent waits; the others run.
- One agent's writes reach the store in the order it made them: `run(key, …)`
  runs the calls of one key one after another (an asyncio lock per key), so a
  pending-turn checkpoint fired by a timer can never land after the commit
  that replaced it.
- A cancel cannot take back a write that has started: the caller waits for it
  to end and the cancel is delivered at its next await, as it was when the
  write blocked the loop (memory then matches the store).
- Lease fencing is the store's own (every write carries the token) and is
  untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from mentra_nb.store.base import Store

__all__ = ["StoreIO"]

T = TypeVar("T")

# Threads for one runtime's store calls: as many agents' writes at once (each waits
# for round trips, not for the CPU). PostgresStore's pool lends 10 connections by
# default: these, the loop's reads and the lease heartbeat.
THREADS = 8


class StoreIO:
    """Runs a runtime's store calls from its loop: directly for a local store, on
    the runtime's store threads for a network one (see the module)."""

    def __init__(self, store: Store) -> None:
        self.off_loop = bool(getattr(store, "network", False))
        self._threads: ThreadPoolExecutor | None = None
        self._order: dict[str, asyncio.Lock] = {}

    async def run(self, key: str, call: Callable[[], T]) -> T:
        """`call()`'s result, after the earlier calls of `key` (an agent's id) ended."""
        if not self.off_loop:
            return call()
        # A cancel already on its way is delivered here, before the write starts
        # (an uncontended lock would not yield to it).
        await asyncio.sleep(0)
        lock = self._order.get(key)
        if lock is None:
            lock = self._order[key] = asyncio.Lock()
        async with lock:
            return await _uncancellable(asyncio.get_running_loop().run_in_executor(self._pool(), call))

    def forget(self, key: str) -> None:
        """`key`'s agent is no longer driven here."""
        self._order.pop(key, None)

    def close(self) -> None:
        """Let the threads end once the calls queued on them have (idempotent)."""
        threads, self._threads = self._threads, None
        if threads is not None:
            threads.shutdown(wait=False)

    def _pool(self) -> ThreadPoolExecutor:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(THREADS, thread_name_prefix="mentra-store")
        return self._threads


async def _uncancellable(write: asyncio.Future[T]) -> T:
    """`write`'s result; a cancel that arrives meanwhile waits for it and is then
    delivered at the caller's next await."""
    cancelled = False
    while not write.done():
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            cancelled = True
    task = asyncio.current_task()
    if cancelled and task is not None:
        # Taken and given back: the next await raises CancelledError, as it would
        # have had the write blocked the loop instead of being awaited.
        task.uncancel()
        task.cancel()
    return write.result()  # or the write's own error
