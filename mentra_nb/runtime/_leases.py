"""Who drives an agent: one lease per agent, held by one runtime at a time.

A runtime's claim names its process (pid, host, start time) and runtime id;
the store refuses a live foreign holder with `LeaseUnavailable` and hands the
lease over at once when the holder's process is dead on this host, or when a
holder on another host stopped heartbeating. The heartbeat runs in a thread of
its own, so a tool that blocks the event loop cannot starve it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid

import psutil

from mentra_nb.errors import StoreError
from mentra_nb.store.base import LeaseClaim, Store

__all__ = ["DEFAULT_LEASE_TTL", "HOST_ID_VARIABLE", "LeaseKeeper", "host_id", "release_leases_quietly"]

log = logging.getLogger("mentra_nb.runtime")

DEFAULT_LEASE_TTL = 30.0
HOST_ID_VARIABLE = "MENTRA_HOST_ID"


def host_id() -> str:
    """This host's name in leases: `MENTRA_HOST_ID` when set (containers that share
    a hostname, or tests playing two hosts), else the hostname. Two processes with
    one host id must see each other's pids: that is how a dead owner is told apart."""
    return os.environ.get(HOST_ID_VARIABLE) or socket.gethostname()


class LeaseKeeper:
    def __init__(self, store: Store, runtime_id: str, *, ttl: float = DEFAULT_LEASE_TTL,
                 label: str | None = None) -> None:
        self.store = store
        self.ttl = ttl
        started_at = psutil.Process().create_time()
        host = host_id()
        pid = os.getpid()
        self.claim = LeaseClaim(
            # Stable for this process and runtime id: a second Runtime object in the
            # same kernel (a re-run setup cell) may take its own leases back.
            owner_id=f"{host}/{pid}/{started_at:.3f}/{runtime_id}",
            token=uuid.uuid4().hex,
            runtime_id=runtime_id,
            pid=pid,
            host=host,
            process_started_at=started_at,
            label=label,
        )
        self.held: set[str] = set()
        self._heartbeat: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def token(self) -> str:
        return self.claim.token

    def acquire(self, agent_id: str) -> None:
        self.store.acquire_lease(agent_id, self.claim, ttl=self.ttl)
        self.held.add(agent_id)
        self.start_heartbeat()

    def start_heartbeat(self) -> None:
        """Start renewing leases (once; the thread lives until `close`)."""
        if self._heartbeat is not None or self._stop.is_set():
            return
        self._heartbeat = threading.Thread(
            target=_beat, args=(self.store, self.token, self.ttl / 3, self._stop),
            name="mentra-lease-heartbeat", daemon=True,
        )
        self._heartbeat.start()

    def close(self) -> None:
        """Stop the heartbeat and release every lease (safe to call twice, from any thread)."""
        self._stop.set()
        heartbeat, self._heartbeat = self._heartbeat, None
        if heartbeat is not None and heartbeat is not threading.current_thread():
            heartbeat.join(timeout=10)
        release_leases_quietly(self.store, self.token)
        self.held.clear()

    async def aclose(self) -> None:
        self.close()


def _beat(store: Store, token: str, interval: float, stop: threading.Event) -> None:
    """The heartbeat thread. It holds the store and the token, never the runtime,
    so a dropped runtime is still garbage collected (its finaliser stops this)."""
    failing = False
    while not stop.wait(interval):
        try:
            store.renew_leases(token)
            failing = False
        except StoreError as err:
            # Once per streak of failures, not every beat.
            (log.debug if failing else log.warning)("could not renew agent leases: %s", err)
            failing = True
        except Exception as err:  # the store was closed under us: nothing left to renew
            log.debug("lease heartbeat stopped: %s", err)
            return


def release_leases_quietly(store: Store, token: str) -> None:
    """Release every lease of `token`; used at close and by the garbage-collection
    finaliser, where there is nobody to report an error to."""
    try:
        store.release_leases(token)
    except Exception as err:  # the store may already be closed at interpreter exit
        log.debug("releasing leases failed: %s", err)
