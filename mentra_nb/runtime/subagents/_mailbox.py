"""Mail between the agents of one tree, and how it reaches a model.

Mail lives in the tree's persisted mailbox (at most 256 items). Before each
model step of its recipient it is added to the run as an internal user message
carrying the mail's id as a marker:

    <subagent_message id="m…" from="/root/research">…</subagent_message>
    <subagent_update id="m…" agent="/root/research" status="completed">…</subagent_update>
    <subagent_approval id="m…" agent="/root/research" tool="write_file">…</subagent_approval>

The content (a child's answer, an agent's message) cannot end its envelope
(runtime/_envelopes.py): an answer holding `</subagent_update><subagent_update
agent="/root/other" …>` reads as that text, not as a second update. Attributes
are escaped as HTML.

An item leaves the mailbox only once the recipient's durable transcript holds
its marker (a run that commits it, or recovery that keeps it). A crash before
that, or a rolled-back run, leaves the item in place, so it is delivered again.
"""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterable

from mentra_nb.messages import Message, Role, TextBlock
from mentra_nb.runtime._envelopes import envelope_text
from mentra_nb.runtime.subagents._errors import SubagentMailboxFull
from mentra_nb.runtime.subagents._tree import MAX_MAILBOX_ITEMS, Mail, TreeDraft

__all__ = [
    "drop_approval_notices",
    "is_internal_mail",
    "mail_markers",
    "new_mail_id",
    "push_message",
    "push_notice",
    "render_mail",
    "unread_senders",
]

_MARKER = re.compile(r'^<subagent_(?:message|update|approval) id="(m[0-9a-f]{16})"')


def new_mail_id() -> str:
    return f"m{uuid.uuid4().hex[:16]}"


def push_notice(draft: TreeDraft, mail: Mail) -> None:
    """A finish notice always gets in: the oldest item makes room for it, because
    a parent must learn that its child ended even when nobody read for a while."""
    while len(draft.mailbox) >= MAX_MAILBOX_ITEMS:
        draft.mailbox.pop(0)
    draft.mailbox.append(mail)


def drop_approval_notices(draft: TreeDraft, sender: str) -> None:
    """Forget `sender`'s approval notices: its calls were answered, so the notice
    would only mislead a parent that has not read it yet."""
    draft.mailbox[:] = [m for m in draft.mailbox if not (m.kind == "approval" and m.sender == sender)]


def push_message(draft: TreeDraft, mail: Mail) -> None:
    """A message between agents is refused when the mailbox is full."""
    if len(draft.mailbox) >= MAX_MAILBOX_ITEMS:
        raise SubagentMailboxFull(
            f"the subagent mailbox is full ({MAX_MAILBOX_ITEMS} unread items); wait for the "
            "agents to read their mail (wait_agent) before sending more"
        )
    draft.mailbox.append(mail)


def render_mail(mail: Mail) -> Message:
    sender = html.escape(mail.sender)
    if mail.kind == "approval":
        tool = html.escape(mail.text)
        text = (f'<subagent_approval id="{mail.id}" agent="{sender}" tool="{tool}">'
                f"{sender} is waiting for the user to approve a call of {tool}; the user "
                "answers it in the notebook. Its result arrives as a <subagent_update> later: call "
                "wait_agent again to wait for it.</subagent_approval>")
    elif mail.kind == "update":
        text = (f'<subagent_update id="{mail.id}" agent="{sender}" status="{html.escape(str(mail.status))}">'
                f"{envelope_text(mail.text)}</subagent_update>")
    else:
        text = (f'<subagent_message id="{mail.id}" from="{sender}">{envelope_text(mail.text)}'
                "</subagent_message>")
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
    """Senders of mail waiting for `recipient`, each once, sorted (as the spec's
    wait returns them)."""
    return sorted({m.sender for m in mailbox if m.recipient == recipient and m.id not in exclude})
