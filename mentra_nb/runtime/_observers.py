"""Fan-out of values to async iterators and plain callbacks, in publish order.

Agents publish every snapshot and event here. Subscribers that iterate get
their own unbounded queue (so they see every value, even when they fall
behind); callbacks run synchronously on the runtime's loop and must be quick.
Nothing is built or queued while nobody listens.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Generic, TypeVar

__all__ = ["Observers"]

T = TypeVar("T")
log = logging.getLogger("mentra_nb.runtime")

_CLOSED = object()


class Observers(Generic[T]):
    def __init__(self) -> None:
        self._queues: list[asyncio.Queue[object]] = []
        self._callbacks: list[Callable[[T], None]] = []
        # A plain attribute, not a method: the stream's hot path checks it per delta.
        self.listening = False

    def _recount(self) -> None:
        self.listening = bool(self._queues or self._callbacks)

    def publish(self, value: T) -> None:
        for queue in self._queues:
            queue.put_nowait(value)
        for callback in list(self._callbacks):
            try:
                callback(value)
            except Exception:  # a broken listener must not break the agent
                log.exception("an observer callback failed")

    def add_callback(self, callback: Callable[[T], None]) -> Callable[[], None]:
        """Call `callback(value)` for every value; returns a function that unsubscribes."""
        self._callbacks.append(callback)
        self._recount()

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)
                self._recount()

        return remove

    async def iterate(self, first: T | None = None) -> AsyncIterator[T]:
        queue: asyncio.Queue[object] = asyncio.Queue()
        if first is not None:
            queue.put_nowait(first)
        self._queues.append(queue)
        self._recount()
        try:
            while True:
                value = await queue.get()
                if value is _CLOSED:
                    return
                yield value  # type: ignore[misc]
        finally:
            self._queues.remove(queue)
            self._recount()

    def close(self) -> None:
        """End every iterator (after the values already queued)."""
        for queue in self._queues:
            queue.put_nowait(_CLOSED)
