"""`Turn`: the handle a cell gets back when it sends an agent work, and `Reply`,
what a `--wait` cell gets: the answer itself."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from pydantic import PrivateAttr

from mentra_nb.errors import AgentError
from mentra_nb.messages import Message
from mentra_nb.notebook._waiting import wait_for

if TYPE_CHECKING:
    from mentra_nb.runtime import PendingApproval, RunResult

__all__ = ["Reply", "Turn"]


class Turn:
    """One send to an agent, running on the runtime thread.

        turn = agent_send(...)          # returns at once
        turn.done(); turn.result(30)    # block only when you want the answer
        reply = await turn              # from a cell (IPython's autoawait)
        turn.cancel()                   # abort; the run is rolled back
        turn.output                     # a typed turn's validated answer (--output MODEL)

    While a cell waits, the agent's views stay answerable (Approve, Deny, Stop):
    see `mentra_nb.notebook._waiting`. Where they cannot be (no ipykernel 7),
    a wait that reaches a call waiting for approval raises `AwaitingApproval`;
    `waiting_calls` (read on the runtime's thread) lists those calls.
    """

    def __init__(self, agent_name: str, run_generation: int,
                 future: concurrent.futures.Future[RunResult[Any]], *,
                 output_type: type | None = None,
                 waiting_calls: Callable[[], list[PendingApproval]] | None = None) -> None:
        self.agent_name = agent_name
        self.run_generation = run_generation
        self.output_type = output_type
        self._future = future
        self._waiting_calls = waiting_calls

    def __repr__(self) -> str:
        # Deterministic on purpose: saved notebooks and nbval compare this text.
        typed = f", output {self.output_type.__name__}" if self.output_type is not None else ""
        return f"Turn({self.agent_name}, run {self.run_generation}{typed})"

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> Message:
        """The final assistant message; raises what the run raised (for a typed
        turn whose answers never validated, `OutputValidationError`)."""
        return self._wait(timeout).message

    def output_result(self, timeout: float | None = None) -> Any:
        """The validated instance of `output_type` (waits for it); None for a turn
        that asked for no typed answer. Raises what the run raised."""
        result = self._wait(timeout)
        if self.output_type is not None and result.output is None:
            raise AgentError(
                f"agent '{self.agent_name}' was stopped before it gave a valid "
                f"{self.output_type.__name__}; its work is kept in the transcript")
        return result.output

    @property
    def output(self) -> Any:
        """`output_result()`: the typed answer, waiting for it."""
        return self.output_result()

    def cancel(self) -> bool:
        return self._future.cancel()

    def _wait(self, timeout: float | None) -> RunResult[Any]:
        asked = self._asked if self._waiting_calls is not None else None
        try:
            return wait_for(self._future, timeout, asked=asked)
        except KeyboardInterrupt:
            if self._future.done():
                raise
            # Only the wait stopped: say what became of the turn.
            raise KeyboardInterrupt(
                f"the cell stopped waiting; '{self.agent_name}' goes on with run {self.run_generation} "
                f"(its view shows it; turn.result() waits again, %mentra interrupt {self.agent_name} "
                "stops it)") from None

    def _asked(self) -> str | None:
        """What the turn waits for the user to answer, said for the cell; None: nothing."""
        assert self._waiting_calls is not None
        calls = self._waiting_calls()
        if not calls:
            return None
        name = self.agent_name
        what = ", ".join(f"{c.tool_name} ({c.reference})" for c in calls)
        return (f"'{name}' waits for your approval of {what} in its view (or %mentra approve {name} "
                f"{calls[0].reference}); the cell stopped waiting: the turn goes on, and turn.result() "
                "gives its answer")

    @property
    def text(self) -> str:
        """The reply's text (waits for it)."""
        return self.result().text

    def __await__(self) -> Generator[Any, None, Message]:
        return self._message().__await__()

    async def _message(self) -> Message:
        return (await asyncio.wrap_future(self._future)).message


class Reply(Message):
    """The assistant's final `Message` of a turn a cell waited for
    (`%%mentra NAME --wait`): the cell's result reads as the reply's text, and
    `reply.turn` is the `Turn` it came from.

        reply = %mentra send writer --wait Say hello.
        reply.text, reply.turn.run_generation
    """

    _turn: Turn | None = PrivateAttr(default=None)

    @classmethod
    def of(cls, message: Message, turn: Turn) -> Reply:
        reply = cls(role=message.role, content=message.content, truncated=message.truncated)
        reply._turn = turn
        return reply

    @property
    def turn(self) -> Turn | None:
        """The `Turn` this reply ended."""
        return self._turn

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython shows the text itself, as the answer reads, not the model's fields.
        printer.text(self.text + (" [stopped here]" if self.truncated else ""))
