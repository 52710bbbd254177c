"""`MailWatcher`: wakes this runtime's agents for mail that another process or
host posted (`rt.post`, a teammate's kernel elsewhere).

A thread waits on the store's `MailSignal` (SQLite: `PRAGMA data_version`
polled every 50 ms; Postgres: LISTEN/NOTIFY) and hands each signal to the
runtime's event loop, where the extensions look for unread mail of the agents
this runtime drives. A thread, like the lease heartbeat, so a tool blocking
the loop delays only the delivery, never the waiting.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

from mentra_nb.store.base import MailSignal, Store

__all__ = ["MailWatcher"]

log = logging.getLogger("mentra_nb.runtime")

_WAIT_SECONDS = 0.1  # how long one wait blocks: bounds how long close() takes


class MailWatcher:
    def __init__(self, store: Store, on_mail: Callable[[], None]) -> None:
        self._store = store
        self._on_mail = on_mail
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

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
            signal = self._store.mail_signal()
        except Exception as err:  # a closed store, a server gone: no wake-ups, say so once
            log.warning("cannot watch for mail from other processes: %s", err)
            self._stop.set()
            return
        self._thread = threading.Thread(target=self._watch, args=(loop, signal), name="mentra-mail-watch",
                                        daemon=True)
        self._thread.start()

    def _watch(self, loop: asyncio.AbstractEventLoop, signal: MailSignal) -> None:
        try:
            while not self._stop.is_set():
                if signal.wait(_WAIT_SECONDS) and not self._stop.is_set():
                    try:
                        loop.call_soon_threadsafe(self._on_mail)
                    except RuntimeError:  # the loop was closed under us
                        return
        except Exception as err:
            log.warning("stopped watching for mail from other processes: %s", err)
        finally:
            signal.close()

    def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
