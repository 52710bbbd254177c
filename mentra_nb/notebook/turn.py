"""`Turn`: the handle a cell gets back when it sends an agent work, and `Reply`,
what a `--wait` cell gets: the answer itself."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Generator
from typing import Any

from pydantic import PrivateAttr

from mentra_nb.messages import Message

__all__ = ["Reply", "Turn"]


class Turn:
    """One send to an agent, running on the runtime thread.

        turn = agent_send(...)          # returns at once
        turn.done(); turn.result(30)    # block only when you want the answer
        reply = await turn              # from a cell (IPython's autoawait)
        turn.cancel()                   # abort; the run is rolled back
    """

    def __init__(self, agent_name: str, run_generation: int,
                 future: concurrent.futures.Future[Message]) -> None:
        self.agent_name = agent_name
        self.run_generation = run_generation
        self._future = future

    def __repr__(self) -> str:
        # Deterministic on purpose: saved notebooks and nbval compare this text.
        return f"Turn({self.agent_name}, run {self.run_generation})"

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> Message:
        """The final assistant message; raises what the run raised."""
        return self._future.result(timeout)

    def cancel(self) -> bool:
        return self._future.cancel()

    @property
    def text(self) -> str:
        """The reply's text (waits for it)."""
        return self.result().text

    def __await__(self) -> Generator[Any, None, Message]:
        return asyncio.wrap_future(self._future).__await__()


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
