"""A subagent tree's mail: a `Mailbox` (runtime/mail.py) of `Mail` items, as teams' is.

`MAIL` letters are scoped by the tree's root agent id; each recipient path
(`/root`, `/root/research`, …) has its own queue, and a letter's key is its
item's id, the marker its delivery carries (runtime/subagents/_mailbox.py). A
run claims its pending mail at the start of each round and delivers each item
as one message holding the item's marker; when the run ends, and whenever the
agent is loaded after a crash, the recipient's transcript decides (`held_in`):
mail whose marker it holds was delivered, mail whose marker a rollback removed
goes back to pending.

Mail that changes the tree (a child's finish notice) is written in the same
transaction as the tree (`MAIL.queue_op`), so the two never disagree on disk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mentra_nb.messages import Message
from mentra_nb.runtime.mail import Letter, Mailbox
from mentra_nb.runtime.subagents._mailbox import mail_markers
from mentra_nb.runtime.subagents._tree import Mail

__all__ = ["MAIL", "held_in"]

MAIL = Mailbox("subagents.mail", Mail)
"""Subagent mail: scoped by the tree's root id, one queue per recipient path."""


def held_in(transcript: Iterable[Message], letters: Sequence[Letter[Mail]]) -> set[int]:
    """Ids of the `letters` whose delivery `transcript` holds: those whose marker it carries."""
    markers = mail_markers(transcript)
    return {letter.id for letter in letters if letter.key in markers}
