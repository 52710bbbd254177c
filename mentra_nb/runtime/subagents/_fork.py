"""`fork_turns`: how much of its parent's conversation a new child starts with.

A turn begins at a user message that is a prompt (not tool results, not
delivered mail). "none" gives the child a clean slate, "all" every turn, N the
last N turns. The parent is mid-turn when it spawns (its `spawn_agent` call has
no result yet), so the fork stops before any tool call that has no answer:
providers reject a transcript with an unpaired tool call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from mentra_nb.messages import Message, Role, ToolResultBlock
from mentra_nb.runtime._recovery import unanswered_tool_uses
from mentra_nb.runtime.subagents._mailbox import is_internal_mail

__all__ = ["ForkTurns", "fork_history", "is_turn_start"]

ForkTurns = Literal["none", "all"] | int


def is_turn_start(message: Message) -> bool:
    return (
        message.role is Role.USER
        and not is_internal_mail(message)
        and any(not isinstance(block, ToolResultBlock) for block in message.content)
    )


def fork_history(history: Sequence[Message], fork_turns: ForkTurns) -> list[Message]:
    """The messages a child inherits (delivered mail left out: it was the parent's)."""
    if fork_turns == "none" or fork_turns == 0:
        return []
    messages = [m for m in history if not is_internal_mail(m)]
    while messages and messages[-1].role is Role.ASSISTANT and unanswered_tool_uses(messages):
        messages.pop()
    if fork_turns == "all":
        return messages
    starts = [index for index, message in enumerate(messages) if is_turn_start(message)]
    if len(starts) <= fork_turns:
        return messages
    return messages[starts[-fork_turns]:]
