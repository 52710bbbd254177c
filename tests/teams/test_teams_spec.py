"""The team tests of spec/000 (mentra's runtime), ported.

As in the Rust tests, the first runtime goes away (here `aclose()`, which is
what dropping it does) and its leases are cleared before a second runtime
opens the same file.
"""

from __future__ import annotations

from mentra_nb import Runtime, SqliteStore, TeamMemberStatus, TeamMessage
from mentra_nb.runtime import teams
from mentra_nb.runtime.teams import mail as team_mail
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.conftest import clear_leases
from tests.teams.helpers import (
    inbox_items,
    latest_team_inbox_text,
    teammate,
    wait_for_requests,
    wait_for_teammate_status,
)


def build(db_path, runtime_id: str, *scripts) -> tuple[Runtime, ScriptedProvider]:
    provider = ScriptedProvider("anthropic", list(scripts))
    return Runtime(store=SqliteStore(db_path), providers=[provider], runtime_id=runtime_id), provider


async def test_list_persisted_agents_includes_teammates_for_runtime(db_path):
    runtime, _ = build(db_path, "persisted-agent-list")
    lead = runtime.spawn("lead", "anthropic:model")
    await lead.spawn_teammate("alice", "researcher", None)

    persisted = runtime.list_persisted_agents("persisted-agent-list")
    assert len(persisted) == 2
    assert persisted[0].name == "lead"
    assert not teams.is_teammate(persisted[0])
    assert persisted[1].name == "alice"
    assert teams.is_teammate(persisted[1])
    assert persisted[1].parent_id == lead.id and persisted[1].role == "researcher"
    await runtime.aclose()


async def test_resume_revives_persisted_teammate_actors_for_lead_runtime(db_path):
    runtime_id = "teammate-revive"
    initial, _ = build(db_path, runtime_id)
    lead = initial.spawn("lead", "anthropic:model")
    await lead.spawn_teammate("alice", "researcher", None)
    await initial.aclose()
    clear_leases(db_path)

    runtime, provider = build(
        db_path, runtime_id,
        tool_use_stream("revived-send", "team_send", '{"to":"lead","content":"revived and responsive"}'),
        text_stream("done"),
        text_stream("checked"),
    )
    resumed = runtime.resume(runtime_id)
    assert len(resumed) == 1
    lead = resumed.pop()
    assert not lead.is_teammate
    assert teammate(lead, "alice").alive  # revived, although rt.resume() returned only the lead

    lead.send_team_message("alice", "Ping me after restart")
    await wait_for_requests(provider, 2)
    await wait_for_teammate_status(lead, "alice", TeamMemberStatus.idle())
    assert lead.snapshot.pending_team_messages == 1

    await lead.send("status?")
    requests = provider.recorded_requests()
    assert len(requests) == 3
    inbox = latest_team_inbox_text(requests[2])
    assert inbox is not None
    assert "alice" in inbox
    assert "revived and responsive" in inbox
    # The user's message (steering) comes first, then the team inbox.
    assert [m.text for m in requests[2].messages[-2:]] == ["status?", inbox]
    assert lead.snapshot.pending_team_messages == 0
    await runtime.aclose()


async def test_resume_wakes_revived_teammate_for_persisted_inbox_work(db_path):
    runtime_id = "teammate-revive-pending-inbox"
    initial, _ = build(db_path, runtime_id)
    lead = initial.spawn("lead", "anthropic:model")
    await lead.spawn_teammate("alice", "researcher", None)
    lead_id = lead.id
    await initial.aclose()
    clear_leases(db_path)

    # Mail arrives while no process runs the team.
    offline = SqliteStore(db_path)
    team_mail.MAIL.queue(offline, lead_id, "alice", TeamMessage(
        sender="lead", content="Handle this persisted inbox work after restart"))
    offline.close()

    runtime, provider = build(
        db_path, runtime_id,
        tool_use_stream("persisted-inbox-send", "team_send",
                        '{"to":"lead","content":"processed persisted inbox"}'),
        text_stream("done"),
    )
    resumed = runtime.resume(runtime_id)
    assert len(resumed) == 1
    lead = resumed.pop()
    assert not lead.is_teammate

    await wait_for_requests(provider, 2)
    await wait_for_teammate_status(lead, "alice", TeamMemberStatus.idle())
    requests = provider.recorded_requests()
    assert len(requests) == 2
    inbox = latest_team_inbox_text(requests[0])
    assert inbox is not None
    assert "Handle this persisted inbox work after restart" in inbox
    [item] = inbox_items(inbox)
    assert item["type"] == "message" and item["from"] == "lead"
    # Delivered by a run that committed: acked, and the lead holds alice's answer.
    assert team_mail.MAIL.list(runtime.store, lead_id, "alice", "pending") == []
    assert [m.message.content for m in team_mail.MAIL.list(runtime.store, lead_id, "lead")] == [
        "processed persisted inbox"]
    await runtime.aclose()
