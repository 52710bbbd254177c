"""A read-only, paged view of a child's transcript, for the notebook's picker.

One page is one logical turn (a prompt and everything that answered it),
newest first; `page.older` is the cursor that loads the turn before. A turn
bigger than `max_bytes` (8 MiB) is split: the page holds its newest messages
and `older` continues inside the same turn, so nothing is unreachable.
Delivered mail is hidden. The latest page of an errored child ends with its
error; an interrupted child's, whose stopped turn was rolled back out of its
transcript, with that turn's prompt (as `rolled_back`: a follow-up replays it)
and what its status says.

It reads committed messages straight from the store, a slice at a time: it
never touches the live agents, so it works while the root (or the child) is
running, from any thread.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from mentra_nb.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock
from mentra_nb.runtime.subagents._errors import InvalidPreviewCursor
from mentra_nb.runtime.subagents._fork import is_turn_start
from mentra_nb.runtime.subagents._mailbox import is_internal_mail
from mentra_nb.runtime.subagents._tree import SubagentRecord, SubagentStatus, bounded_text
from mentra_nb.store.base import Store

__all__ = ["PREVIEW_MAX_BYTES", "PreviewPage", "preview_page"]

PREVIEW_MAX_BYTES = 8 * 1024 * 1024
"""The most bytes of transcript one preview page reads."""
_BATCH = 64  # messages read per store query while looking for a turn's start
_CURSOR = re.compile(r"^older:(\d{1,12})$")


class PreviewPage(BaseModel):
    """One page of a child's transcript. `messages` are in chronological order."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    path: str
    agent_id: str | None
    status: SubagentStatus
    model: str
    messages: list[Message]
    older: str | None = None  # pass as `before=` to load the older turn; None at the start
    truncated: bool = False  # the turn was split (or a message shortened) to fit max_bytes
    error: str | None = None  # an errored child's error, on its latest page
    # An interrupted child's latest page: what its status says, and the prompt of the
    # stopped turn, rolled back out of the transcript (None if it was not).
    interrupted: str | None = None
    rolled_back: Message | None = None

    @property
    def has_older(self) -> bool:
        return self.older is not None


def _parse_cursor(cursor: str, count: int) -> int:
    match = _CURSOR.match(cursor) if isinstance(cursor, str) else None
    if match is None or int(match.group(1)) == 0:
        raise InvalidPreviewCursor(
            f"invalid subagent preview cursor {cursor!r}: pass None for the latest turn, or the "
            "`older` value of a page"
        )
    # A rolled-back run may have shortened the transcript since the cursor was made.
    return min(int(match.group(1)), count)


def _size(message: Message) -> int:
    return len(message.model_dump_json().encode("utf-8"))


def _shrunk(message: Message, max_bytes: int) -> Message:
    """A message too big for a page on its own, with its long texts cut."""
    budget = max(1024, max_bytes // (2 * max(1, len(message.content))))
    blocks = []
    for block in message.content:
        if isinstance(block, TextBlock):
            block = block.model_copy(update={"text": bounded_text(block.text, budget)})
        elif isinstance(block, ThinkingBlock):
            block = block.model_copy(update={"thinking": bounded_text(block.thinking, budget)})
        elif isinstance(block, ToolResultBlock):
            block = block.model_copy(update={"content": bounded_text(block.content, budget)})
        blocks.append(block)
    return message.model_copy(update={"content": blocks})


def preview_page(
    store: Store, path: str, record: SubagentRecord, message_count: int, before: str | None = None,
    *, max_bytes: int = PREVIEW_MAX_BYTES,
) -> PreviewPage:
    """The turn that ends before `before` (the latest turn when None)."""
    end = message_count if before is None else _parse_cursor(before, message_count)
    newest_first: list[Message] = []
    size = 0
    start = end
    truncated = False
    position = end
    done = record.agent_id is None
    while not done and position > 0:
        low = max(0, position - _BATCH)
        batch = store.load_messages(record.agent_id, low, position)  # type: ignore[arg-type]
        for offset in range(len(batch) - 1, -1, -1):
            message = batch[offset]
            cost = _size(message)
            if size + cost > max_bytes:
                if newest_first:  # the rest of this turn is the next page
                    truncated = done = True
                    break
                message, cost, truncated = _shrunk(message, max_bytes), max_bytes, True
            newest_first.append(message)
            size += cost
            start = low + offset
            if is_turn_start(message):
                done = True
                break
        position = low
    messages = [m for m in reversed(newest_first) if not is_internal_mail(m)]
    latest = before is None
    error = record.last_message if record.status == "errored" and latest else None
    interrupted = rolled_back = None
    if record.status == "interrupted" and latest:
        interrupted = record.last_message or "interrupted"
        stored = store.load_agent(record.agent_id, transcript=False) if record.agent_id is not None else None
        rolled_back = stored.resumable_turn if stored is not None else None
    return PreviewPage(
        path=path, agent_id=record.agent_id, status=record.status, model=record.model,
        messages=messages, older=f"older:{start}" if start > 0 else None, truncated=truncated,
        error=error, interrupted=interrupted, rolled_back=rolled_back,
    )
