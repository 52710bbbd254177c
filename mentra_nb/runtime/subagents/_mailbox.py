"""Mail between the agents of one tree, and how it reaches a model.

Mail lives in the tree's persisted mailbox (at most 256 items). Before each
model step of its recipient it is added to the run as an internal user message
carrying the mail's id as a marker:

    <subagent_message id="m…" from="/root/research">…</subagent_message>
    <subagent_update id="m…" agent="/root/research" status="completed">…</subagent_update>

An item leaves the mailbox only once the recipient's durable transcript holds
its marker (a run that commits it, or recovery that keeps it). A crash before
that, or a rolled-back run, leaves the item in place, so it is delivered again.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable

from mentra_nb.messages import Message, Role, TextBlock
from mentra_nb.runtime.subagents._errors import SubagentMailboxFull
from mentra_nb.runtime.subagents._tree import MAX_MAILBOX_ITEMS, Mail, TreeDraft

__all__ = [
    "is_internal_mail",
    "mail_markers",
    "new_mail_id",
    "push_message",
    "push_notice",
    "render_mail",
    "unread_senders",
]

_MARKER = re.compile(r'^<subagent_(?:message|update) id="(m[0-9a-f]{16})"')


def new_mail_id() -> str:
    return f"m{uuid.uuid4().hex[:16]}"


def push_notice(draft: TreeDraft, mail: Mail) -> None:
    """A finish notice always gets in: the oldest item makes room for it, because
    a parent must learn that its child ended even when nobody read for a while."""
    while len(draft.mailbox) >= MAX_MAILBOX_ITEMS:
        draft.mailbox.pop(0)
    draft.mailbox.append(mail)


def push_message(draft: TreeDraft, mail: Mail) -> None:
    """A message between agents is refused when the mailbox is full."""
    if len(draft.mailbox) >= MAX_MAILBOX_ITEMS:
        raise SubagentMailboxFull(
            f"the subagent mailbox is full ({MAX_MAILBOX_ITEMS} unread items); wait for the "
            "agents to read their mail (wait_agent) before sending more"
        )
    draft.mailbox.append(mail)


def render_mail(mail: Mail) -> Message:
    if mail.kind == "update":
        text = (f'<subagent_update id="{mail.id}" agent="{mail.sender}" status="{mail.status}">'
                f"{mail.text}</subagent_update>")
    else:
        text = f'<subagent_message id="{mail.id}" from="{mail.sender}">{mail.text}</subagent_message>'
    return Message(role=Role.USER, content=[TextBlock(text=text)])


def _marker(message: Message) -> str | None:
    if message.role is not Role.USER or len(message.content) != 1:
        return None
    block = message.content[0]
    if not isinstance(block, TextBlock):
        return None
    match = _MARKER.match(block.text)
    return match.group(1) if match else None


def is_internal_mail(message: Message) -> bool:
    """Whether `message` is delivered mail (hidden from previews)."""
    return _marker(message) is not None


def mail_markers(messages: Iterable[Message]) -> set[str]:
    """Ids of the mail whose delivery `messages` hold."""
    return {marker for m in messages if (marker := _marker(m)) is not None}


def unread_senders(mailbox: Iterable[Mail], recipient: str, exclude: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Senders of mail waiting for `recipient`, first come first, each once."""
    senders: list[str] = []
    for mail in mailbox:
        if mail.recipient == recipient and mail.id not in exclude and mail.sender not in senders:
            senders.append(mail.sender)
    return senders
