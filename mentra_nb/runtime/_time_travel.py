"""Time travel's vocabulary: a branch of an agent's history, and the checks its
operations share.

Every committed message is a checkpoint (`mentra_nb.store.Checkpoint`). A fork is
a new agent reading its source's first messages; a rewind starts a new head
branch and keeps the old one; nothing is copied and nothing is deleted unless
the user deletes it (`rt.delete_agent`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from mentra_nb.errors import AgentError
from mentra_nb.messages import Message, Role, ToolResultBlock
from mentra_nb.store.base import Checkpoint

__all__ = ["FORK_CUT_TOOL_RESULT", "Branch", "check_index", "results_for_cut_calls"]

FORK_CUT_TOOL_RESULT = "not run: the history was forked before this tool call had a result"


class Branch(BaseModel):
    """A line of an agent's history (`agent.branches()`): its first `fork_index`
    messages are its parent branch's, `checkpoints` are its own messages after
    them, and `is_head` says it is the one the agent reads and extends now."""

    model_config = ConfigDict(frozen=True)

    id: str
    parent_id: str | None
    fork_index: int
    length: int
    is_head: bool
    created_at: float
    checkpoints: list[Checkpoint]

    @property
    def preview(self) -> str:
        """The first words of its first own message ("" for a branch with none)."""
        return self.checkpoints[0].preview if self.checkpoints else ""


def check_index(name: str, what: str, index: object, length: int) -> int:
    """`index` as a position in `[0, length]`, or an `AgentError` saying why not."""
    if isinstance(index, bool) or not isinstance(index, int):
        raise AgentError(f"{what} takes a message index (an int), not {index!r}")
    if not 0 <= index <= length:
        raise AgentError(
            f"agent '{name}' has {length} committed messages, so {what} takes an index from 0 "
            f"to {length}, not {index}; agent.checkpoints() lists them"
        )
    return index


def results_for_cut_calls(last: Message | None) -> Message | None:
    """Error results for the tool calls of `last` when a history is cut right
    after it (providers reject a call without a result), else None."""
    if last is None or last.role is not Role.ASSISTANT or not last.tool_uses:
        return None
    return Message(role=Role.USER, content=[
        ToolResultBlock(tool_use_id=use.id, content=FORK_CUT_TOOL_RESULT, is_error=True)
        for use in last.tool_uses
    ])
