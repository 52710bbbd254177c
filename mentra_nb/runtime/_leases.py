"""Who drives an agent: one lease per agent, held by one runtime at a time.

A runtime's claim names its process (pid, host, start time) and runtime id;
the store refuses a live foreign holder with `LeaseUnavailable` and hands the
lease over at once when the holder's process is dead on this host or its
heartbeat expired. A heartbeat task renews the leases while the runtime's
event loop runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid

import psutil

from mentra_nb.errors import StoreError
from mentra_nb.store.base import LeaseClaim, Store

__all__ = ["DEFAULT_LEASE_TTL", "LeaseKeeper", "release_leases_quietly"]

log = logging.getLogger("mentra_nb.runtime")

DEFAULT_LEASE_TTL = 30.0


class LeaseKeeper:
    def __init__(self, store: Store, runtime_id: str, *, ttl: float = DEFAULT_LEASE_TTL,
                 label: str | None = None) -> None:
        self.store = store
        self.ttl = ttl
        started_at = psutil.Process().create_time()
        host = socket.gethostname()
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
        self._heartbeat: asyncio.Task[None] | None = None

    @property
    def token(self) -> str:
        return self.claim.token

    def acquire(self, agent_id: str) -> None:
        self.store.acquire_lease(agent_id, self.claim, ttl=self.ttl)
        self.held.add(agent_id)
        self.start_heartbeat()

    def start_heartbeat(self) -> None:
        """Start renewing leases if an event loop runs here and no heartbeat does yet."""
        if self._heartbeat is not None and not self._heartbeat.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # sync use: the next async call starts it
        self._heartbeat = loop.create_task(self._beat(), name="mentra-lease-heartbeat")

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                self.store.renew_leases(self.token)
            except StoreError as err:
                log.warning("could not renew agent leases: %s", err)

    async def aclose(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
            self._heartbeat = None
        release_leases_quietly(self.store, self.token)
        self.held.clear()


def release_leases_quietly(store: Store, token: str) -> None:
    """Release every lease of `token`; used at close and by the garbage-collection
    finaliser, where there is nobody to report an error to."""
    try:
        store.release_leases(token)
    except Exception as err:  # the store may already be closed at interpreter exit
        log.debug("releasing leases failed: %s", err)
