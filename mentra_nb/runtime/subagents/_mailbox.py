"""Mail between the agents of one tree, and how it reaches a model.

Mail is queued as records (runtime/subagents/mail.py), as many as are sent.
Before each model step of its recipient it is claimed and added to the run as
an internal user message carrying the mail's id as a marker:

    <subagent_message id="m…" from="/root/research">…</subagent_message>
    <subagent_update id="m…" agent="/root/research" status="completed">…</subagent_update>
    <subagent_approval id="m…" agent="/root/research" tool="write_file">…</subagent_approval>

The content (a child's answer, an agent's message) cannot end its envelope
(runtime/_envelopes.py): an answer holding `</subagent_update><subagent_update
agent="/root/other" …>` reads as that text, not as a second update. Attributes
are escaped as HTML.

An item is settled as read only once the recipient's durable transcript holds
its marker (a run that commits it, or recovery that keeps it). A crash before
that, or a rolled-back run, puts it back in the queue, so it is delivered again.
"""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterable

from mentra_nb.messages import Message, Role, TextBlock
from mentra_nb.runtime._envelopes import envelope_text
from mentra_nb.runtime.subagents._tree import Mail, TreeDraft

__all__ = [
    "is_internal_mail",
    "mail_markers",
    "new_mail_id",
    "render_mail",
    "send",
    "unread_senders",
]

_MARKER = re.compile(r'^<subagent_(?:message|update|approval) id="(m[0-9a-f]{16})"')


def new_mail_id() -> str:
    return f"m{uuid.uuid4().hex[:16]}"


def send(draft: TreeDraft, mail: Mail) -> None:
    """Queue `mail` with the draft's commit. There is no cap: every item is a row of
    its own, and a finish notice must reach its parent however long nobody read."""
    draft.outbox.append(mail)


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


def unread_senders(pending: Iterable[Mail]) -> list[str]:
    """Senders of `pending` mail, each once, sorted (as the spec's wait returns them)."""
    return sorted({m.sender for m in pending})
