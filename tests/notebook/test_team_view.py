"""TeamView with a real team: members, a plan to approve, answers from the browser."""

from __future__ import annotations

import json
import logging
import time

import pytest

from mentra_nb import AgentConfig, Runtime, SqliteStore
from mentra_nb.notebook.host import RuntimeHost
from mentra_nb.notebook.team_view import TeamView
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream


@pytest.fixture
def host():
    h = RuntimeHost()
    yield h
    h.stop()


def until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.01)


@pytest.fixture
def team(host, db_path):
    plan = json.dumps({"to": "lead", "protocol": "plan_approval", "content": "Plan: delete old rows"})
    provider = ScriptedProvider("anthropic", [tool_use_stream("r1", "team_request", plan),
                                              text_stream("Waiting for approval")])
    rt = host.call(lambda: Runtime.empty(store=SqliteStore(db_path), providers=[provider]))
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
