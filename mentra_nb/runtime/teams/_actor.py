"""`TeammateActor`: what keeps a teammate working on its own.

An actor is woken (by mail, a protocol request or response, or revival) and
then runs wake cycles in a task on the runtime's event loop: one run after
another while the teammate has unread mail, each run starting with nothing but
its injected `<team-inbox>`. Between wakes it has no task at all. The teammate's status
follows: working during the cycle, then idle; failed{error} when a run fails
(its mail was requeued, so the next wake that brings new mail retries it); shutdown after a cycle
that ends with an approved shutdown, which also ends the actor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from mentra_nb.errors import MentraError
from mentra_nb.messages import Role
from mentra_nb.runtime._services import AgentHandle
from mentra_nb.runtime.teams._snapshot import TeamMemberStatus

__all__ = ["ActorTeam", "TeammateActor"]

log = logging.getLogger("mentra_nb.runtime")


class ActorTeam(Protocol):
    """What an actor asks of its team (`Team` is one)."""

    def unread(self, name: str, *, refresh: bool = False) -> int: ...
    def status_of(self, name: str) -> TeamMemberStatus: ...
    def set_status(self, name: str, status: TeamMemberStatus) -> None: ...
    def take_shutdown(self, name: str) -> bool: ...
    def actor_stopped(self, name: str) -> None: ...


class TeammateActor:
    def __init__(self, team: ActorTeam, agent: AgentHandle, *, continue_first: bool = False) -> None:
        self.team = team
        self.agent = agent
        # A teammate killed inside a tool call was revived with its call answered
        # by an error result: its first cycle continues that run.
        self._continue = continue_first
        self._woken = False  # a wake not yet served by a cycle
        # After a run failed or was cancelled: the unread count its requeued mail left.
        # Wakes that bring no mail beyond it are not served (see _nothing_new).
        self._unread_when_stopped: int | None = None
        self._started = False
        self._ended = False
        # The wake cycles in progress, if any. An idle actor has no task: nothing
        # pends on the loop, so a dropped runtime with idle teammates is collected
        # quietly, its finaliser releasing their leases.
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def alive(self) -> bool:
        """Started on this process's loop and not ended (shutdown, or its runtime closed)."""
        return self._started and not self._ended

    @property
    def started(self) -> bool:
        return self._started

    def start(self) -> bool:
        """Start on the running loop; False when called outside one (started later)."""
        if self._started:
            return True
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        self._started = True
        if self._woken:
            self._work_soon()
        return True

    def wake(self) -> None:
        self._woken = True
        if self._started and not self._ended:
            self._work_soon()

    def _work_soon(self) -> None:
        loop = self._loop
        assert loop is not None  # set by start(), which comes first
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if not on_loop:  # woken from another thread: start the cycle on the actor's loop
            loop.call_soon_threadsafe(self._work_soon)
        elif self._task is None or self._task.done():
            self._task = loop.create_task(self._work(), name=f"mentra-teammate-{self.agent.name}")

    async def aclose(self) -> None:
        was_alive = self.alive
        self._ended = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif was_alive:
            self.team.actor_stopped(self.agent.name)

    async def _work(self) -> None:
        """Serve wakes until none is left (a wake during a cycle runs one more)."""
        try:
            while self._woken and not self._ended:
                self._woken = False
                if self._nothing_new():
                    continue
                if not await self._cycle():
                    self._ended = True
        except Exception:
            # Never silent: a dead actor leaves its teammate unable to answer mail.
            self._ended = True
            log.exception("the actor of teammate %s stopped", self.agent.name)
            self._set_status(TeamMemberStatus.failed("its actor stopped; see the log"))
        finally:
            if self._ended or _cancelling():
                self._ended = True
                self.team.actor_stopped(self.agent.name)

    async def _cycle(self) -> bool:
        """Run while there is work; False when the actor should end."""
        agent = self.agent
        team = self.team
        worked = False
        services = agent.services
        while not services.closed:
            running = agent.current_run
            if running is not None:  # someone drove the teammate by hand: let that run end first
                try:
                    await asyncio.shield(running)
                except asyncio.CancelledError:
                    if _cancelling():
                        raise
                except Exception:
                    pass  # that run's caller got its error
                continue
            if self._continue:
                self._continue = False
                if not (agent.history and agent.history[-1].role is Role.USER):
                    continue
            elif team.unread(agent.name, refresh=True) == 0:
                break
            self._set_status(TeamMemberStatus.working())
            worked = True
            try:
                await agent.start_run()
            except asyncio.CancelledError:
                if services.closed or _cancelling():
                    raise
                # The user cancelled this run (its mail was requeued); wait for new mail
                # instead of starting the same work again at once.
                self._stopped_with_mail_requeued()
                self._set_status(TeamMemberStatus.idle())
                return True
            except Exception as err:
                message = str(err) if isinstance(err, MentraError) else f"{type(err).__name__}: {err}"
                self._stopped_with_mail_requeued()
                self._set_status(TeamMemberStatus.failed(message))
                return True
        if services.closed:
            return False
        if team.take_shutdown(agent.name):
            self._set_status(TeamMemberStatus.shutdown())
            return False
        if worked or team.status_of(agent.name).name == "working":
            self._set_status(TeamMemberStatus.idle())
        return True

    def _stopped_with_mail_requeued(self) -> None:
        self._unread_when_stopped = self.team.unread(self.agent.name, refresh=True)

    def _nothing_new(self) -> bool:
        """Whether this wake brings no mail the failed or cancelled run did not have.

        Such wakes come at once: the mail watch sees the requeue in the store (and may
        have seen the post that run had claimed). Serving them retried a failing
        provider in a tight loop, about 17 calls a second, each possibly billed; the
        teammate now stays failed (or idle) until new mail arrives or it is revived."""
        if self._unread_when_stopped is None:
            return False
        if self.team.unread(self.agent.name, refresh=True) <= self._unread_when_stopped:
            return True
        self._unread_when_stopped = None
        return False

    def _set_status(self, status: TeamMemberStatus) -> None:
        self.team.set_status(self.agent.name, status)


def _cancelling() -> bool:
    """Whether this task itself is being cancelled (not merely the run it awaited)."""
    current = asyncio.current_task()
    return current is not None and current.cancelling() > 0
