"""Closing a runtime: what `aclose()` stops and releases, and what happens when
a runtime is dropped without it.

`RuntimeParts` holds what a close needs (the live agents, the extensions, the
lease keeper, the providers) apart from the `Runtime` object itself. Agents and
the tasks driving them (runs, and what extensions run on their own) reach their
runtime only through weak references, so a runtime the user no longer holds is
collected even while such tasks are pending; its finaliser (`on_dropped`) then
runs the same close on the runtime's event loop: the tasks are cancelled and
roll back, and only then are the leases released, so no task is destroyed
pending and no lease stays behind. At interpreter exit the finaliser only
releases the leases: the process ends as a crash would, and the next runtime's
recovery marks its cut turns interrupted.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from mentra_nb.errors import MentraError
from mentra_nb.providers.registry import ProviderRegistry
from mentra_nb.runtime._extensions import AgentExtension, RuntimeExtension
from mentra_nb.runtime._leases import LeaseKeeper
from mentra_nb.runtime._state import AgentState

__all__ = ["ClosableAgent", "RuntimeParts", "on_dropped", "weak_method"]

log = logging.getLogger("mentra_nb.runtime")

F = TypeVar("F", bound=Callable[..., Any])

# Closes scheduled by finalisers: the loop keeps only weak references to tasks.
_closing: set[asyncio.Task[None]] = set()


class ClosableAgent(Protocol):
    """What a close needs of each live agent (`Agent` is one)."""

    @property
    def current_run(self) -> asyncio.Task[Any] | None: ...
    @property
    def extensions(self) -> tuple[AgentExtension, ...]: ...
    @property
    def state(self) -> AgentState: ...
    def cancel(self) -> None: ...


class RuntimeParts:
    """A runtime's live agents, extensions, leases and providers, and whether it is closed."""

    def __init__(self, *, runtime_id: str, agents: dict[str, Any], extensions: Sequence[RuntimeExtension],
                 leases: LeaseKeeper, providers: ProviderRegistry) -> None:
        self.runtime_id = runtime_id
        self.agents: dict[str, ClosableAgent] = agents
        self.extensions = extensions
        self.leases = leases
        self.providers = providers
        self.closed = False
        # The loop the runtime's runs use, noted when a run starts: where a dropped
        # runtime's close must run.
        self.loop: asyncio.AbstractEventLoop | None = None

    def is_closed(self) -> bool:
        return self.closed

    async def close(self) -> None:
        """Cancel running turns (they roll back), stop every extension's tasks
        (the agents and servers they run), then release the leases."""
        if self.closed:
            return
        self.closed = True
        agents = list(self.agents.values())
        running = [task for agent in agents if (task := agent.current_run) is not None]
        for agent in agents:
            agent.cancel()
        # Each cancelled run rolls itself back; its exception was already reported
        # to whoever awaited send().
        await asyncio.gather(*running, return_exceptions=True)
        for agent in agents:
            for agent_extension in agent.extensions:
                await agent_extension.aclose()
        for extension in self.extensions:
            await extension.aclose()
        for agent in agents:
            agent.state.close()
        await self.leases.aclose()
        await self.providers.aclose()


def on_dropped(parts: RuntimeParts) -> None:
    """The finaliser of a runtime collected without `aclose()` (or at exit)."""
    if parts.closed:
        return
    if _interpreter_exiting():
        # The process ends now: leave every run as a crash would (the next runtime's
        # recovery marks it interrupted and keeps it resumable) and free the leases.
        parts.closed = True
        parts.leases.close()
        return
    if not any(agent.current_run is not None for agent in parts.agents.values()):
        # Nothing to roll back first: the leases go now, as when a dropped runtime
        # is collected between runs (spec/000); the close below stops the rest.
        parts.leases.close()
    loop = parts.loop
    if loop is None or loop.is_closed() or not loop.is_running():
        # No loop to run tasks on (a script's asyncio.run has ended, or the
        # interpreter is exiting): nothing can be pending there; let go of the leases.
        parts.closed = True
        parts.leases.close()
        return
    try:
        on_loop = asyncio.get_running_loop() is loop
    except RuntimeError:
        on_loop = False
    if on_loop:
        # At once, not on the next iteration: a script's asyncio.run may be ending,
        # and it cancels (and so finishes) only the tasks that exist by then.
        _start_close(parts)
        return
    try:
        loop.call_soon_threadsafe(_start_close, parts)
    except RuntimeError:  # the loop closed meanwhile
        parts.closed = True
        parts.leases.close()


def _interpreter_exiting() -> bool:
    # Finalisers registered for exit run after the main thread has stopped.
    return sys.is_finalizing() or not threading.main_thread().is_alive()


def _start_close(parts: RuntimeParts) -> None:
    task = asyncio.get_running_loop().create_task(_close_dropped(parts),
                                                  name=f"mentra-close-{parts.runtime_id}")
    _closing.add(task)
    task.add_done_callback(_closing.discard)


async def _close_dropped(parts: RuntimeParts) -> None:
    try:
        await parts.close()
    except (MentraError, OSError) as err:  # nobody is left to tell
        log.warning("closing a dropped runtime '%s' failed: %s", parts.runtime_id, err)
    finally:
        # Also when the loop's own shutdown cancels this close: its runs are being
        # cancelled too, and what they could not roll back is recovered as after a crash.
        parts.closed = True
        parts.leases.close()


def weak_method(method: F, gone: str) -> F:
    """`method` of an object held weakly: calling it once the object was collected
    raises `MentraError(gone)` instead of keeping the object alive."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any, **kwargs: Any) -> Any:
        bound = ref()
        if bound is None:
            raise MentraError(gone)
        return bound(*args, **kwargs)

    return call  # type: ignore[return-value]
