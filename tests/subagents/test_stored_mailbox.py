"""A subagent tree stored with its mailbox inside (before mail became records)
opens: its mail becomes `subagents.mail` records once, in the write that opens
the tree, and is delivered as any other mail.

The fixture (tests/subagents/fixtures/tree_mailbox_v1.sql) is a dump of a file
that code wrote: a root with a completed child `/root/a`, a message from the
root to `/root/a` and `/root/a`'s finish notice to the root, both unread."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from mentra_nb import Runtime, SqliteStore
from mentra_nb.runtime.subagents import list_subagents, stored_tree
from mentra_nb.runtime.subagents import mail as subagent_mail
from mentra_nb.testing import text_stream
from tests.conftest import WAIT_LIMIT
from tests.subagents.helpers import RoutedProvider, mail_texts

FIXTURE = Path(__file__).parent / "fixtures" / "tree_mailbox_v1.sql"
ROOT_ID = "f94dc43bce364626b78ba9503977b6fb"
MESSAGE_ID, NOTICE_ID = "m4b9c669152b84574", "m2e6101b9a692457f"


def old_file(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(FIXTURE.read_text())
    return path


async def test_a_tree_stored_with_its_mailbox_opens_and_its_mail_is_delivered_once(tmp_path):
    path = old_file(tmp_path)
    provider = RoutedProvider(model=[text_stream("a found X")])
    rt = Runtime.empty(store=SqliteStore(path), runtime_id="nb", providers=[provider])
    [root] = rt.resume()
    assert root.id == ROOT_ID
    assert [(i.path, i.status) for i in list_subagents(root)] == [("/root/a", "completed")]
    # Moved out of the tree, into records, in one write.
    assert "mailbox" not in stored_tree(rt.store, ROOT_ID)
    pending = subagent_mail.MAIL.pending(rt.store, ROOT_ID)
    assert [(m.id, m.sender, m.recipient, m.kind, m.text) for m in pending] == [
        (MESSAGE_ID, "/root", "/root/a", "message", "also check Y"),
        (NOTICE_ID, "/root/a", "/root", "update", "found X"),
    ]

    await asyncio.wait_for(root.send("What did a find?"), WAIT_LIMIT)
    [delivered] = mail_texts(provider.requests("model")[0])
    assert delivered.startswith(f'<subagent_update id="{NOTICE_ID}" agent="/root/a" status="completed">found X')
    # The root's mail is read; /root/a's waits for its next turn.
    assert [m.id for m in subagent_mail.MAIL.pending(rt.store, ROOT_ID)] == [MESSAGE_ID]
    await rt.aclose()

    # Opened again, nothing is moved twice.
    rt = Runtime.empty(store=SqliteStore(path), runtime_id="nb", providers=[RoutedProvider()])
    rt.resume()
    assert [m.id for m in subagent_mail.MAIL.pending(rt.store, ROOT_ID)] == [MESSAGE_ID]
    await rt.aclose()
