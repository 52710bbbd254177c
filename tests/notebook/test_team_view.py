"""TeamView with a real team: members, a plan to approve, answers from the browser."""

from __future__ import annotations

import json
import logging

import pytest

from mentra_nb import AgentConfig, Runtime, SqliteStore
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook.team_view import TeamView
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.conftest import until
from tests.notebook.conftest import open_runtime


@pytest.fixture
def host():
    h = RuntimeHost()
    yield h
    h.stop()


@pytest.fixture
def team(host, db_path):
    plan = json.dumps({"to": "lead", "protocol": "plan_approval", "content": "Plan: delete old rows"})
    provider = ScriptedProvider("anthropic", [tool_use_stream("r1", "team_request", plan),
                                              text_stream("Waiting for approval")])
    rt = open_runtime(host, lambda: Runtime.empty(store=SqliteStore(db_path), providers=[provider]))
    lead = host.call(lambda: rt.spawn("lead", "anthropic:m", config=AgentConfig(team=True)))
    return lead, provider


def test_members_and_a_pending_plan_show_and_can_be_approved(host, team):
    lead, _provider = team
    view = TeamView(lead, host)
    assert view.members == [] and view.requests == []
    host.submit(lead.spawn_teammate("alice", "researcher", "Clean the table")).result(5)
    until(lambda: view.requests and view.members and view.members[0]["status"] == "idle")
    member = view.members[0]
    assert (member["name"], member["role"], member["alive"]) == ("alice", "researcher", True)
    request = view.requests[0]
    assert (request["protocol"], request["sender"], request["content"]) == (
        "plan_approval", "alice", "Plan: delete old rows")
    assert repr(view) == "TeamView(lead, 1 teammates, 1 pending requests)"
    view._on_browser_message(view, {"kind": "approve", "request_id": request["id"]}, [])
    until(lambda: view.requests == [])
    answered = host.call(lambda: lead.team_requests(status=None))
    assert answered[0].status == "approved"


def test_rejecting_needs_a_reason_and_a_stale_answer_is_a_notice(host, team, caplog):
    lead, _ = team
    view = TeamView(lead, host)
    host.submit(lead.spawn_teammate("alice", "researcher", "Clean the table")).result(5)
    until(lambda: view.requests)
    request_id = view.requests[0]["id"]
    with caplog.at_level(logging.WARNING, logger="mentra_nb.notebook"):
        view._on_browser_message(view, {"kind": "reject", "request_id": request_id}, [])
    assert "ignored an invalid message" in caplog.text
    view._on_browser_message(view, {"kind": "reject", "request_id": request_id, "reason": "too risky"}, [])
    until(lambda: view.requests == [])
    view._on_browser_message(view, {"kind": "approve", "request_id": request_id}, [])
    until(lambda: view.notice != "")
    assert "pending" in view.notice
    data = view._repr_mimebundle_()
    data = data[0] if isinstance(data, tuple) else data
    assert "| alice | researcher |" in data["text/markdown"]


def test_a_teammates_tool_call_waiting_for_approval_is_answered_in_the_team_view(host, db_path):
    from mentra_nb import tool

    dropped = []

    @tool(requires_approval=True)
    def drop_rows(table: str) -> str:
        """Delete the old rows of a table."""
        dropped.append(table)
        return f"dropped {table}"

    # The teammate calls drop_rows twice (approved, then denied), then answers.
    provider = ScriptedProvider("anthropic", [
        tool_use_stream("c1", "drop_rows", '{"table": "events"}'),
        tool_use_stream("c2", "drop_rows", '{"table": "users"}'),
        text_stream("Done"),
    ])
    rt = open_runtime(host, lambda: Runtime.empty(store=SqliteStore(db_path), providers=[provider], tools=[drop_rows]))
    lead = host.call(lambda: rt.spawn("lead", "anthropic:m", config=AgentConfig(team=True)))
    view = TeamView(lead, host)
    host.submit(lead.spawn_teammate("alice", "cleaner", "Clean the tables")).result(5)
    until(lambda: view.approvals)
    [waiting] = view.approvals
    assert (waiting["agent"], waiting["id"], waiting["name"]) == ("alice", "c1", "drop_rows")
    assert '"table": "events"' in waiting["input"]
    markdown = view._repr_mimebundle_()[0]["text/markdown"]
    assert "*alice waits for approval:* `drop_rows` (`%mentra approve` `alice` `c1@1`)" in markdown
    view._on_browser_message(view, {"kind": "approve_call", "agent": "alice", "call_id": "c1"}, [])
    until(lambda: view.approvals and view.approvals[0]["id"] == "c2")
    assert dropped == ["events"]
    view._on_browser_message(view, {"kind": "deny_call", "agent": "bob", "call_id": "c2"}, [])
    until(lambda: view.notice != "")
    assert "teammate 'bob' is not running" in view.notice
    view._on_browser_message(view, {"kind": "deny_call", "agent": "alice", "call_id": "c2",
                                    "reason": "keep the users"}, [])
    until(lambda: view.approvals == [] and view.members[0]["status"] == "idle")
    assert dropped == ["events"] and view.notice == ""
    alice = host.call(lambda: rt.agent("alice"))
    denied = alice.history[-2].tool_results[0]
    assert denied.is_error and "keep the users" in denied.content
    view.close()


def test_a_click_on_a_teammate_opens_its_transcript_in_pages(host, team, monkeypatch):
    import mentra_nb.notebook.team_view as team_view_module

    lead, _ = team
    view = TeamView(lead, host)
    host.submit(lead.spawn_teammate("alice", "researcher", "Clean the table")).result(5)
    until(lambda: view.members and view.members[0]["status"] == "idle" and view.requests)
    alice = host.call(lambda: lead.runtime.store.list_agents(lead.runtime.runtime_id))
    count = next(r.message_count for r in alice if r.name == "alice")
    assert count >= 2  # her prompt, her plan request (a tool call) and its result
    monkeypatch.setattr(team_view_module, "PREVIEW_PAGE", 1)

    # Transcripts go out as messages every view of the model receives; each view
    # names itself, and keeps the one it has open.
    sent: list[dict] = []
    monkeypatch.setattr(view, "send", lambda content, buffers=None: sent.append(content))

    def last(name: str, pages: int = 1) -> dict:
        until(lambda: any(m["name"] == name and m["pages"] == pages for m in sent))
        return [m for m in sent if m["name"] == name and m["pages"] == pages][-1]

    view._on_browser_message(view, {"kind": "open", "name": "alice", "view": "v1"}, [])
    preview = last("alice")
    assert preview["has_older"] is True
    assert {item["index"] for item in preview["items"]} == {count - 1}
    view._on_browser_message(view, {"kind": "older", "view": "v1"}, [])
    assert {item["index"] for item in last("alice", 2)["items"]} == {count - 2, count - 1}
    # A second view of the team opens its own page of alice; closing one leaves the other's.
    view._on_browser_message(view, {"kind": "open", "name": "alice", "view": "v2"}, [])
    until(lambda: host.call(lambda: view._open) == {"v1": ("alice", 2), "v2": ("alice", 1)})
    view._on_browser_message(view, {"kind": "close", "view": "v1"}, [])
    until(lambda: host.call(lambda: view._open) == {"v2": ("alice", 1)})
    view._on_browser_message(view, {"kind": "close", "view": "v2"}, [])
    until(lambda: host.call(lambda: view._open) == {})
    monkeypatch.setattr(team_view_module, "PREVIEW_PAGE", 100)
    sent.clear()
    view._on_browser_message(view, {"kind": "open", "name": "alice", "view": "v1"}, [])
    preview = last("alice")
    assert preview["has_older"] is False
    assert preview["items"][0]["index"] == 0
    assert "Clean the table" in preview["items"][0]["html"]

    view._on_browser_message(view, {"kind": "open", "name": "mallory", "view": "v1"}, [])
    assert last("mallory")["error"] == "'mallory' is not on lead's team"
