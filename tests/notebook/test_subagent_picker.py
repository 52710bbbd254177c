"""SubagentPickerView with real child agents: badge, list, preview, load older."""

from __future__ import annotations

import json
import logging

import pytest

from mentra_nb import (
    AgentConfig,
    ContentBlockDelta,
    ContentBlockStarted,
    MessageStarted,
    Runtime,
    SqliteStore,
)
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook.subagent_picker import SubagentPickerView
from mentra_nb.testing import controlled_stream, text_stream, tool_use_stream
from tests.conftest import until
from tests.notebook.conftest import open_runtime
from tests.subagents.helpers import RoutedProvider, call


@pytest.fixture
def host():
    h = RuntimeHost()
    yield h
    h.stop()


def spawn_call(tool_id, task, message):
    return (tool_id, "spawn_agent", json.dumps({"task_name": task, "message": message, "model": "anthropic:child"}))


@pytest.fixture
def delegated(host, db_path):
    """A root that delegated to two children, then followed up with the first."""
    provider = RoutedProvider(
        root=[
            tool_use_stream(*spawn_call("s1", "alpha", "Summarise part A"),
                            calls=[spawn_call("s2", "beta", "Summarise part B")]),
            call("w1", "wait_agent"),
            call("w2", "wait_agent"),
            call("f1", "followup_task", target="/root/alpha", message="Now shorter"),
            call("w3", "wait_agent"),
            text_stream("All summarised"),
        ],
        child=[text_stream("A is long"), text_stream("B is fine"), text_stream("A, short")],
    )
    rt = open_runtime(host, lambda: Runtime.empty(store=SqliteStore(db_path), providers=[provider]))
    root = host.call(lambda: rt.spawn("lead", "anthropic:root", config=AgentConfig(subagents=True)))
    return root


def settle(host):
    host.call(lambda: None)


def test_the_badge_and_list_follow_the_tree(host, delegated):
    view = SubagentPickerView(delegated, host)
    assert view.options == [] and view.badge == {}
    host.submit(delegated.send("Summarise A and B")).result(10)
    settle(host)
    assert [(o["label"], o["status"]) for o in view.options] == [("alpha", "completed"), ("beta", "completed")]
    assert view.badge == {"count": 2, "text": "2", "tone": "neutral"}
    assert repr(view) == "SubagentPickerView(lead, 2 subagents)"


def test_a_click_opens_the_latest_turn_and_load_older_prepends_the_one_before(host, delegated):
    host.submit(delegated.send("Summarise A and B")).result(10)
    view = SubagentPickerView(delegated, host)
    view._on_browser_message(view, {"kind": "open", "path": "/root/alpha"}, [])
    settle(host)
    preview = view.preview
    assert preview["path"] == "/root/alpha" and preview["status"] == "completed"
    assert [i.get("html", "").strip() for i in preview["items"]] == ["<p>Now shorter</p>", "<p>A, short</p>"]
    assert preview["has_older"]
    view._on_browser_message(view, {"kind": "older"}, [])
    settle(host)
    assert [i["html"].strip() for i in view.preview["items"]] == [
        "<p>Summarise part A</p>", "<p>A is long</p>", "<p>Now shorter</p>", "<p>A, short</p>"]
    assert not view.preview["has_older"]
    view._on_browser_message(view, {"kind": "close"}, [])
    settle(host)
    assert view.preview == {}


def test_interrupting_an_idle_child_reports_the_refusal(host, delegated):
    host.submit(delegated.send("Summarise A and B")).result(10)
    view = SubagentPickerView(delegated, host)
    view._on_browser_message(view, {"kind": "interrupt", "path": "/root/beta"}, [])
    settle(host)
    assert view.notice  # a completed child has no active turn: a clear message, no exception


def test_invalid_picker_messages_are_ignored(host, delegated, caplog):
    view = SubagentPickerView(delegated, host)
    with caplog.at_level(logging.WARNING, logger="mentra_nb.notebook"):
        for junk in [{"kind": "open", "path": "../etc/passwd"}, {"kind": "open"}, {"kind": "zap"}, None]:
            view._on_browser_message(view, junk, [])
    assert len([r for r in caplog.records if "ignored an invalid message" in r.message]) == 4


def test_an_agent_without_subagents_gets_a_clear_error(host, db_path):
    rt = open_runtime(host, lambda: Runtime.empty(store=SqliteStore(db_path)))
    plain = host.call(lambda: rt.spawn("plain", "test"))
    with pytest.raises(Exception, match="subagents=True"):
        SubagentPickerView(plain, host)


def streaming_child(host, db_path):
    """A root whose child alpha has streamed "half a sentence", open in a picker:
    (the runtime, the picker, the root's turn, the child's stream control)."""
    child, control = controlled_stream()
    provider = RoutedProvider(
        root=[tool_use_stream(*spawn_call("s1", "alpha", "Write it")), call("w1", "wait_agent"),
              text_stream("done")],
        child=[child],
    )
    rt = open_runtime(host, lambda: Runtime.empty(store=SqliteStore(db_path), providers=[provider]))
    root = host.call(lambda: rt.spawn("lead", "anthropic:root", config=AgentConfig(subagents=True)))
    view = SubagentPickerView(root, host)
    turn = host.submit(root.send("go"))
    until(lambda: [(o["label"], o["status"]) for o in view.options] == [("alpha", "running")])
    view._on_browser_message(view, {"kind": "open", "path": "/root/alpha"}, [])
    for event in (MessageStarted(id="c1", model="child"), ContentBlockStarted.text(0),
                  ContentBlockDelta.text(0, "half a sentence")):
        host.call_soon(control.send, event)
    until(lambda: view.preview_live == "half a sentence")
    return rt, view, turn, control


def test_a_running_childs_preview_shows_its_live_text(host, db_path):
    """Issue 15.8: a running subagent's preview showed its committed turns only."""
    rt, view, turn, control = streaming_child(host, db_path)
    assert view.preview["status"] == "running"
    for event in text_stream(" and the rest").events[2:]:  # the same block goes on, then ends
        host.call_soon(control.send, event)
    host.call_soon(control.close)
    assert turn.result(10).text == "done"
    until(lambda: view.preview_live == "")
    host.submit(rt.aclose()).result(10)


def test_an_interrupted_childs_preview_shows_its_stopped_task_and_status(host, db_path):
    """Issue 36.6: Interrupt rolls the child's turn back out of its transcript, and its
    preview was empty. It shows the prompt of the stopped turn and what its status says."""
    _rt, view, turn, _control = streaming_child(host, db_path)
    view._on_browser_message(view, {"kind": "interrupt", "path": "/root/alpha"}, [])
    assert turn.result(10).text == "done"
    view._on_browser_message(view, {"kind": "open", "path": "/root/alpha"}, [])
    until(lambda: view.preview.get("status") == "interrupted")
    items = view.preview["items"]
    assert [(i["role"], i["kind"]) for i in items] == [("user", "text"), ("user", "notice")]
    assert items[0]["html"].strip() == "<p>Write it</p>"
    assert "interrupted: its turn was stopped and rolled back" in items[1]["html"]


def test_a_child_waiting_for_approval_is_shown_and_answered_in_the_picker(host, tmp_path):
    """Issue 16.1: the picker shows the paused call; Approve lets the child finish."""
    provider = RoutedProvider(
        root=[call("s1", "spawn_agent", task_name="writer", message="Write out.txt", model="anthropic:child"),
              call("w1", "wait_agent"), call("w2", "wait_agent"), text_stream("written")],
        child=[call("c1", "write_file", path="out.txt", content="hello"), text_stream("wrote out.txt")],
    )
    rt = open_runtime(host, lambda: Runtime(store=SqliteStore(tmp_path / "s.sqlite"), providers=[provider],
                                   workspace=tmp_path))
    root = host.call(lambda: rt.spawn("lead", "anthropic:root", config=AgentConfig(subagents=True)))
    view = SubagentPickerView(root, host)
    turn = host.submit(root.send("Get out.txt written"))
    until(lambda: view.approvals)
    [waiting] = view.approvals
    assert (waiting["path"], waiting["name"], waiting["ref"]) == ("/root/writer", "write_file", "c1@1")
    assert view.options[0]["waiting_for_approval"] == ["write_file"]
    assert "| `/root/writer` | waiting for approval: write_file |" in view._markdown()

    for junk in ({"kind": "approve_call", "path": "/etc", "call_id": "c1@1"},
                 {"kind": "approve_call", "path": "/root/writer", "call_id": ""}):
        view._on_browser_message(view, junk, [])  # invalid: logged and ignored
    view._on_browser_message(view, {"kind": "approve_call", "path": "/root/writer", "call_id": "c1@1"}, [])
    assert turn.result(10).text == "written"
    settle(host)
    assert (tmp_path / "out.txt").read_text() == "hello"
    assert view.approvals == [] and view.options[0]["waiting_for_approval"] == []
    assert view.options[0]["status"] == "completed"

    # A click on a call that no longer waits says so, without a traceback.
    view._on_browser_message(view, {"kind": "deny_call", "path": "/root/writer", "call_id": "c1@1"}, [])
    settle(host)
    assert "has no call 'c1@1' waiting for approval" in view.notice
