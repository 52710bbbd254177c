"""Lease rules every store applies the same way: who counts as a live holder,
and what the errors say."""

from __future__ import annotations

import psutil

from mentra_nb.errors import LeaseUnavailable
from mentra_nb.store.base import LeaseClaim, LeaseRecord

__all__ = [
    "START_TIME_SLACK",
    "describe_holder",
    "holder_is_live",
    "lease_lost_message",
    "lease_unavailable",
    "process_is_alive",
]


def lease_lost_message(agent_id: str, holder: tuple[int, str] | None) -> str:
    """The refusal of a write by a runtime whose lease another one took (or that
    was released): `holder` is the new holder's (pid, host)."""
    now_held = "nobody" if holder is None else f"pid {holder[0]} on {holder[1]}"
    return (
        f"this runtime no longer holds the lease of agent {agent_id} (now held by {now_held}); "
        "the write was refused so the newer runtime's state is kept. Resume the agent again "
        "to take it back."
    )


# --- lease liveness -------------------------------------------------------------


def holder_is_live(holder: LeaseRecord, claim: LeaseClaim, now: float, ttl: float) -> bool:
    """On this host, live exactly while its process runs: a dead kernel's agents
    are taken over at once, and a living one never loses them, however old its
    heartbeat (a loop blocked by a tool is not a dead owner; taking over would
    run the tool's side effects twice). On another host, where the process cannot
    be seen, live while it heartbeats: a silent remote owner is taken over after
    `ttl`, and the lease token fences it out from then on."""
    if holder.host == claim.host:
        return process_is_alive(holder.pid, holder.process_started_at)
    return now - holder.heartbeat_at < ttl


START_TIME_SLACK = 2.5  # seconds


def process_is_alive(pid: int, started_at: float) -> bool:
    """True if `pid` runs and is the same process that started at `started_at`
    (a recycled pid belongs to another process; a zombie is dead)."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        # A process's start time is its boot-relative start plus the boot time, which
        # /proc/stat gives in whole seconds recomputed from a wall clock that NTP slews:
        # two processes can read it a second apart. A recycled pid would have to start
        # within the slack of the dead process's start to be mistaken for it.
        return abs(proc.create_time() - started_at) < START_TIME_SLACK
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def describe_holder(holder: LeaseRecord) -> str:
    label = f" ({holder.label})" if holder.label else ""
    return f"runtime '{holder.runtime_id}' in pid {holder.pid} on {holder.host}{label}"


def lease_unavailable(holder: LeaseRecord, claim: LeaseClaim, now: float, ttl: float) -> LeaseUnavailable:
    """The refusal of `claim` while `holder` is live (see `holder_is_live`). A holder
    on another host is live only while it heartbeats, so the error says when its
    lease runs out if it stays silent: a resume can come back for the agent then."""
    silent_for = now - holder.heartbeat_at
    expires_in = None if holder.host == claim.host else max(0.0, ttl - silent_for)
    return LeaseUnavailable(
        f"agent {holder.agent_id} is driven by another live runtime: {describe_holder(holder)}, "
        f"last heartbeat {silent_for:.0f} s ago. Stop that kernel or process "
        f"(or close its runtime) and try again; a holder on another host is taken over "
        f"{ttl:.0f} s after its last heartbeat.",
        holder=holder, expires_in=expires_in,
    )
