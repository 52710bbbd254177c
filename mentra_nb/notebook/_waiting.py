"""A cell that waits for a turn while the agent's views stay answerable.

A cell that waits (`%%mentra NAME --wait`, `-f code`, `--output`,
`turn.result()`) holds the kernel's main thread. A click in a view (Approve,
Deny, Stop) reaches Python as a comm message on the shell channel, and the
kernel queues it behind the running cell: the click would wait for the cell,
and the cell for the click. So while it waits, the cell reads the main shell's
queue itself (ipykernel 7: the inproc socket the shell channel thread forwards
to, as jupyter-ui-poll does with ipykernel 6's queue):

- comm messages (`comm_open`, `comm_msg`, `comm_close`) are handled at once by
  the kernel's own handlers, with this cell as their parent (what a widget's
  callback prints shows here);
- everything else (the next cells of a Run All, a completion, `kernel_info`)
  is held, never run, and put back at the head of the queue in its order when
  the wait ends, so it runs after this cell exactly as it would have.

An interrupt (the kernel's Interrupt) ends the wait at the next poll, never in
the middle of moving a message, so nothing queued is lost.

Where the cell cannot do that (ipykernel 6, a plain IPython shell) and nothing
else can answer while it waits (it waits on the main thread), a wait that
reaches a call waiting for approval stops there (`AwaitingApproval`): the turn
goes on, and the view's buttons work once the cell has ended. A wait on another
thread just blocks: the main thread is free to take the clicks.
"""

from __future__ import annotations

import concurrent.futures
import inspect
import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, TypeVar

from mentra_nb.errors import AwaitingApproval

__all__ = ["cell_is_waiting", "pump_comms_until", "wait_for"]

log = logging.getLogger("mentra_nb.notebook")

T = TypeVar("T")

# How often a waiting cell looks at its queue: a click is answered within this,
# while the turn's end wakes the cell at once.
POLL_SECONDS = 0.05
# The comm messages a waiting cell handles; ipykernel 7 lets the same through to
# an async cell that holds the shell.
COMM_MESSAGES = frozenset({"comm_open", "comm_msg", "comm_close"})
# The longest the shell channel thread is kept paused while held messages are
# put back (it takes microseconds; this only bounds a broken handshake).
HANDOVER_SECONDS = 10.0


# Whether the main thread is inside `wait_for` now: a cell run asked of the front
# end then queues behind the waiting cell (its execute request is held), so the
# cell tools say so at once instead of waiting for a turn that waits for them.
_waiting = threading.Event()


def cell_is_waiting() -> bool:
    """Whether a cell holds the kernel's main thread waiting for a turn."""
    return _waiting.is_set()


def wait_for(future: concurrent.futures.Future[T], timeout: float | None, *,
             asked: Callable[[], str | None] | None = None) -> T:
    """`future.result(timeout)`, with the views answerable meanwhile (see the module).

    Where they cannot be, raises `AwaitingApproval` as soon as `asked()` returns
    what the turn waits for (None: nothing)."""
    if future.done() or threading.current_thread() is not threading.main_thread():
        return future.result(timeout)
    _waiting.set()
    try:
        return _wait_on_main_thread(future, timeout, asked)
    finally:
        _waiting.clear()


def pump_comms_until(future: concurrent.futures.Future[T], timeout: float) -> T:
    """`future.result(timeout)` on the main thread with the comm messages that arrive
    meanwhile handled (ipykernel 7; elsewhere a plain wait): how a cell waits for
    the page's answer to something it just asked. Not a turn's wait: cell runs are
    not refused meanwhile."""
    pump = ShellPump.for_this_thread() if threading.current_thread() is threading.main_thread() else None
    if pump is None:
        return future.result(timeout)
    with pump:
        return _poll(future, time.monotonic() + timeout, pump.take_queued)


def _wait_on_main_thread(future: concurrent.futures.Future[T], timeout: float | None,
                         asked: Callable[[], str | None] | None) -> T:
    pump = ShellPump.for_this_thread()
    deadline = None if timeout is None else time.monotonic() + timeout
    if pump is not None:
        with pump:
            return _poll(future, deadline, pump.take_queued)
    if asked is None:
        return future.result(timeout)

    def stop_if_asked() -> None:
        question = asked()
        if question is not None and not future.done():
            raise AwaitingApproval(question)

    return _poll(future, deadline, stop_if_asked)


def _poll(future: concurrent.futures.Future[T], deadline: float | None, between: Callable[[], None]) -> T:
    """The future's result, with `between()` called every POLL_SECONDS until it comes
    (its end wakes this at once)."""
    while True:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return future.result(POLL_SECONDS if remaining is None else min(POLL_SECONDS, remaining))
        except concurrent.futures.TimeoutError:
            if remaining is not None and remaining <= POLL_SECONDS:
                raise
        between()


class ShellPump:
    """The main shell's queue, read by the cell that waits (ipykernel 7).

    Used as a context manager around the wait: inside, an interrupt is noted and
    raised at the next `take_queued()`; on leaving, held messages go back."""

    def __init__(self, kernel: Any, channel_thread: Any, inbox: Any, outbox: Any, replies: Any) -> None:
        self._kernel = kernel
        self._channel_thread = channel_thread
        self._inbox = inbox        # the main shell's end: read on the main thread only
        self._outbox = outbox      # the shell channel thread's end: written on that thread only
        self._replies = replies    # where the main shell's handlers send replies
        self._held: list[list[bytes]] = []
        self._interrupted = False
        self._saved_sigint: Any = None

    @classmethod
    def for_this_thread(cls) -> ShellPump | None:
        """The pump of the ipykernel 7 kernel whose main shell runs on this thread, or
        None (no kernel, an older ipykernel, a subshell's thread)."""
        from IPython import get_ipython

        kernel: Any = getattr(get_ipython(), "kernel", None)
        channel_thread = getattr(kernel, "shell_channel_thread", None)
        if channel_thread is None or getattr(channel_thread, "parent_thread", None) is not threading.current_thread():
            return None
        try:
            manager = channel_thread.manager
            pair = manager.get_shell_channel_to_subshell_pair(None)
            replies = manager.get_subshell_to_shell_channel_socket(None)
            inbox, outbox, io_loop = pair.to_socket, pair.from_socket, channel_thread.io_loop
            if kernel.session is None or not callable(getattr(io_loop, "add_callback", None)):
                return None
        except AttributeError:  # an ipykernel 7 that routes its messages otherwise
            return None
        return cls(kernel, channel_thread, inbox, outbox, replies)

    def __enter__(self) -> ShellPump:
        # A KeyboardInterrupt between taking a message off the queue and holding it
        # would lose that message (a cell that never runs): note it, raise it later.
        self._saved_sigint = signal.signal(signal.SIGINT, self._note_interrupt)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        try:
            self._put_back_held()
        finally:
            # (None: a handler set outside Python; the kernel's own is the default one)
            signal.signal(signal.SIGINT, self._saved_sigint or signal.default_int_handler)

    def _note_interrupt(self, _signum: int, _frame: FrameType | None) -> None:
        self._interrupted = True

    def take_queued(self) -> None:
        """Handle the comm messages that arrived, hold the rest; raises KeyboardInterrupt
        if the kernel was interrupted since the last call."""
        self._read(handle_comms=True)
        if self._interrupted:
            self._interrupted = False
            raise KeyboardInterrupt

    def _read(self, *, handle_comms: bool) -> None:
        import zmq

        while True:
            try:
                raw = self._inbox.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            comm = self._comm_message(raw) if handle_comms else None
            if comm is None:
                self._held.append(raw)
                continue
            handler, identities, message = comm
            try:
                handler(self._replies, identities, message)
            except Exception:
                log.exception("a %s failed while a cell waited", message["header"]["msg_type"])

    def _comm_message(self, raw: list[bytes]) -> tuple[Callable[..., Any], list[bytes], dict[str, Any]] | None:
        """(handler, identities, message) of a comm message the kernel handles with a
        plain function; None for any other (held as it came)."""
        session = self._kernel.session
        try:
            identities, frames = session.feed_identities(raw, copy=True)
            # A look at the header only: the session records a message's signature (and
            # refuses it ever after) only when it unpacks the content, so the kernel can
            # still read a held message when it comes back.
            header = session.deserialize(frames, content=False, copy=True)["header"]
        except Exception:  # not ours to judge: the kernel reports a bad message itself
            return None
        handler = self._kernel.shell_handlers.get(header.get("msg_type"))
        # (A coroutine handler could not finish inside this cell: the kernel runs it later.)
        if header.get("msg_type") not in COMM_MESSAGES or handler is None \
                or inspect.iscoroutinefunction(handler):
            return None
        try:
            return handler, identities, session.deserialize(frames, content=True, copy=True)
        except Exception:
            return None

    def _put_back_held(self) -> None:
        """Put the held messages back at the head of the main shell's queue, in order.

        Only the shell channel thread writes that queue, so it is paused (a callback on
        its loop that waits) while this thread reads what it forwarded meanwhile; then
        it sends everything held, before anything newer."""
        if not self._held:
            return  # what is still queued is in its order
        held = self._held
        paused, read = threading.Event(), threading.Event()

        def on_channel_thread() -> None:
            paused.set()
            read.wait(HANDOVER_SECONDS)
            for raw in held:
                self._outbox.send_multipart(raw)

        self._channel_thread.io_loop.add_callback(on_channel_thread)
        try:
            if paused.wait(HANDOVER_SECONDS):
                self._read(handle_comms=False)
        finally:
            read.set()
            self._held = []
