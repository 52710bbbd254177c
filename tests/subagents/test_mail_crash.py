"""Subagent mail across a real process death (the subagent side of
tests/teams/test_team_crash.py): a child process is SIGKILLed while its root's
run holds a child's notice inflight, and this process resumes the root. The
notice is delivered again if the kill lost it and not again if the transcript
kept it: never lost, never twice."""

from __future__ import annotations

import asyncio

import pytest

from mentra_nb import INTERRUPTED_TOOL_RESULT, Message, Runtime, SqliteStore, ToolResultBlock
from mentra_nb.runtime.subagents import mail as subagent_mail
from mentra_nb.runtime.subagents._mailbox import mail_markers
from mentra_nb.testing import text_stream
from tests.children import Child, integrity
from tests.conftest import WAIT_LIMIT
from tests.subagents.helpers import RoutedProvider, mail_texts

pytestmark = pytest.mark.process


@pytest.fixture
def killed(db_path, children):
    """kill(phase) -> (root id, notice id), once the child process was SIGKILLed."""

    def kill(phase: str) -> tuple[str, str]:
        process = Child("tests.subagents.mail_child", str(db_path), phase)
        children.append(process)
        root_id, notice_id = process.ready()
        process.kill()
        return root_id, notice_id

    return kill


def markers(store: SqliteStore, agent_id: str) -> list[str]:
    return [m for message in store.load_messages(agent_id) for m in mail_markers([message])]


async def test_a_notice_inflight_in_a_killed_stream_is_delivered_again_after_resume(db_path, killed):
    root_id, notice_id = killed("streaming")
    assert integrity(db_path) == "ok"
    store = SqliteStore(db_path)
    [inflight] = subagent_mail.MAIL.inflight(store, root_id)
    assert inflight.key == notice_id

    provider = RoutedProvider(root=[text_stream("b is done")])
    rt = Runtime.empty(store=SqliteStore(db_path), runtime_id="mail-crash", providers=[provider])
    [root] = rt.resume()
    # The run that read it was rolled back: the notice waits again.
    assert [m.id for m in subagent_mail.MAIL.pending(rt.store, root_id)] == [notice_id]
    await asyncio.wait_for(root.resume(), WAIT_LIMIT)  # replays "Anything new?"
    [redelivered] = mail_texts(provider.requests("root")[0])
    assert f'id="{notice_id}"' in redelivered and "B done" in redelivered
    assert markers(rt.store, root_id) == [notice_id]
    assert subagent_mail.MAIL.pending(rt.store, root_id) == []
    assert subagent_mail.MAIL.inflight(rt.store, root_id) == []
    await rt.aclose()


async def test_a_notice_a_killed_tool_call_already_read_is_not_delivered_twice(db_path, killed):
    root_id, notice_id = killed("tool")

    provider = RoutedProvider(root=[text_stream("continued after the crash")])
    rt = Runtime.empty(store=SqliteStore(db_path), runtime_id="mail-crash", providers=[provider])
    [root] = rt.resume()
    # Recovery kept the committed tool call and the notice before it: read, once.
    assert subagent_mail.MAIL.pending(rt.store, root_id) == []
    assert subagent_mail.MAIL.inflight(rt.store, root_id) == []
    assert markers(rt.store, root_id) == [notice_id]
    assert root.history[-1] == Message.user(
        ToolResultBlock(tool_use_id="tool-1", content=INTERRUPTED_TOOL_RESULT, is_error=True))

    await asyncio.wait_for(root.send("Go on"), WAIT_LIMIT)
    assert len(mail_texts(provider.requests("root")[0])) == 1  # the one kept delivery, none new
    assert markers(rt.store, root_id) == [notice_id]
    await rt.aclose()
