"""`MailWatcher`: wakes this runtime's agents for mail that another process or
host posted (`rt.post`, an agent driven by a kernel elsewhere).

A thread waits on the store's `RecordSignal` (SQLite: `PRAGMA data_version`
polled every 50 ms; Postgres: LISTEN/NOTIFY) and hands each signal to the
runtime's event loop, where the extensions look for unread mail of the agents
this runtime drives. A thread, like the lease heartbeat, so a tool blocking
the loop delays only the delivery, never the waiting.

Signals are coalesced: each wake looks for all unread mail, so while one is
queued on the loop another adds nothing, and wakes are at least
`MIN_WAKE_SECONDS` apart. A flood of signals (another role NOTIFYing without
end, a burst of posts) gives the loop at most one callback per interval, not
one per signal, and a signal is never dropped: the wake after it reads the mail.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

from mentra_nb.store.base import RecordSignal, Store

__all__ = ["MailWatcher"]

log = logging.getLogger("mentra_nb.runtime")

_WAIT_SECONDS = 0.1  # how long one wait blocks: bounds how long close() takes
MIN_WAKE_SECONDS = 0.05  # wakes of the loop at least this far apart (SQLite's poll)


class MailWatcher:
    def __init__(self, store: Store, on_mail: Callable[[], None]) -> None:
        self._store = store
        self._on_mail = on_mail
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._queued = threading.Event()  # a wake waits on the loop: it will read any mail

    def start(self) -> None:
        """Start watching for the running event loop (once; a no-op outside a loop)."""
        if self._thread is not None or self._stop.is_set():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        # Opened here, not in the thread: the signal notes the mail there is when it
        # opens, so mail posted once start() returned is always heard.
        try:
            signal = self._store.record_signal()
        except Exception as err:  # a closed store, a server gone: no wake-ups, say so once
            log.warning("cannot watch for mail from other processes: %s", err)
            self._stop.set()
            return
        self._thread = threading.Thread(target=self._watch, args=(loop, signal), name="mentra-mail-watch",
                                        daemon=True)
        self._thread.start()

    def _watch(self, loop: asyncio.AbstractEventLoop, signal: RecordSignal) -> None:
        owed = False  # a signal came that no queued wake covers yet
        next_wake = 0.0
        try:
            while not self._stop.is_set():
                left = next_wake - time.monotonic()
                heard = signal.wait(min(_WAIT_SECONDS, max(0.0, left)) if owed else _WAIT_SECONDS)
                if heard and not self._queued.is_set():
                    owed = True
                # A wake queued but not yet run reads all mail committed before it runs,
                # which includes whatever this signal announced: nothing is owed then.
                if owed and time.monotonic() >= next_wake and not self._stop.is_set():
                    owed = False
                    next_wake = time.monotonic() + MIN_WAKE_SECONDS
                    self._queued.set()
                    try:
                        loop.call_soon_threadsafe(self._wake)
                    except RuntimeError:  # the loop was closed under us
                        return
        except Exception as err:
            log.warning("stopped watching for mail from other processes: %s", err)
        finally:
            signal.close()

    def _wake(self) -> None:
        # Cleared first: mail committed while on_mail runs signals a wake of its own.
        self._queued.clear()
        self._on_mail()

    def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
