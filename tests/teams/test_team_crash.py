"""Team mail across a real process death: a child process is SIGKILLed while
its teammate's run holds mail inflight, and this process resumes the team.
Mail is delivered at least once, and the durable transcript never holds the
same delivery twice."""

from __future__ import annotations

import pytest

from mentra_nb import (
    INTERRUPTED_TOOL_RESULT,
    AgentStatus,
    Message,
    TeamMemberStatus,
    ToolResultBlock,
)
from mentra_nb.runtime.teams import mail as team_mail
from mentra_nb.runtime.teams._inbox import holds_inbox
from mentra_nb.testing import ScriptedProvider, text_stream
from tests.children import Child
from tests.teams.helpers import (
    inbox_items,
    latest_team_inbox_text,
    runtime,
    wait_for_requests,
    wait_for_teammate_status,
)

pytestmark = pytest.mark.process


@pytest.fixture
def child(db_path, children):
    """start(phase) -> (child, lead id, alice id)."""

    def start(phase: str) -> tuple[Child, str, str]:
        process = Child("tests.teams.team_child", str(db_path), phase)
        children.append(process)
        lead_id, alice_id = process.ready()
        return process, lead_id, alice_id

    return start


async def test_mail_inflight_in_a_killed_stream_is_delivered_again_after_resume(child, db_path):
    proc, lead_id, alice_id = child("streaming")
    proc.kill()

    provider = ScriptedProvider("anthropic", [text_stream("summary done")])
    rt = runtime(db_path, provider, runtime_id="team-crash")
    [inflight] = team_mail.MAIL.inflight(rt.store, alice_id)
    assert inflight.message.content == "Summarise the findings"

    [lead] = rt.resume()
    assert lead.id == lead_id
    await wait_for_requests(provider, 1)
    await wait_for_teammate_status(lead, "alice", TeamMemberStatus.idle())

    alice = lead.teammate("alice")
    [delivered] = inbox_items(latest_team_inbox_text(provider.requests[0]))
    assert delivered["content"] == "Summarise the findings"
    transcript = rt.store.load_messages(alice_id)
    assert len(transcript) == 2 and transcript == alice.history
    assert holds_inbox(transcript[0]) and transcript[1] == Message.assistant("summary done")
    assert [m.state for m in team_mail.MAIL.list(rt.store, lead_id, "alice")] == ["done"]
    await rt.aclose()


async def test_mail_a_killed_tool_call_already_answered_is_not_delivered_twice(child, db_path):
    proc, lead_id, alice_id = child("tool")
    proc.kill()

    provider = ScriptedProvider("anthropic", [text_stream("continued after the crash")])
    rt = runtime(db_path, provider, runtime_id="team-crash")
    [lead] = rt.resume()
    # Recovery kept the committed tool call, so the mail is in the transcript: acked.
    assert [m.state for m in team_mail.MAIL.list(rt.store, lead_id, "alice")] == ["done"]

    # The revived teammate continues the run the crash interrupted.
    await wait_for_requests(provider, 1)
    await wait_for_teammate_status(lead, "alice", TeamMemberStatus.idle())
    inbox, call, result, answer = lead.teammate("alice").history
    assert inbox_items(inbox.text)[0]["content"] == "Summarise the findings"
    assert call.tool_uses[0].name == "blocking_tool"
    assert result == Message.user(
        ToolResultBlock(tool_use_id="tool-1", content=INTERRUPTED_TOOL_RESULT, is_error=True))
    assert answer == Message.assistant("continued after the crash")
    assert sum(holds_inbox(m) for m in rt.store.load_messages(alice_id)) == 1
    assert lead.teammate("alice").status == AgentStatus.finished()
    await rt.aclose()
