"""AgentView's time travel without a browser: "Fork from here", "Edit", a fork's
header, and a transcript that is replaced rather than appended to."""

from __future__ import annotations

import logging

import pytest

from mentra_nb import Runtime
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook.agent_view import AgentView
from tests.conftest import until
from tests.notebook.test_agent_view import opened, replay_as_the_browser_does


@pytest.fixture
def host():
    h = RuntimeHost()
    yield h
    h.stop()


def conversation(host, turns: int = 2):
    rt = host.call(lambda: Runtime.empty())
    agent = host.call(lambda: rt.spawn("writer", "test"))
    for i in range(turns):
        host.submit(agent.send(f"question {i}")).result(10)
    return rt, agent


def texts(items):
    return [i.get("html", "") for i in items if i["kind"] == "text"]


def test_fork_from_here_makes_a_fork_and_says_how_to_show_it(host):
    rt, agent = conversation(host)
    view = AgentView(agent, host)
    view._on_browser_message(view, {"kind": "fork", "at": 2, "name": "writer-fork"}, [])
    until(lambda: view.notice != "")
    assert view.notice.startswith("forked as 'writer-fork' with the first 2 messages")
    fork = host.call(lambda: rt.agent("writer-fork"))
    assert [m.text for m in fork.history] == ["question 0", "You said: question 0"]
    assert len(agent.history) == 4
    view._on_browser_message(view, {"kind": "fork", "at": 9, "name": "other"}, [])
    until(lambda: view.notice.startswith("could not fork"))
    assert "from 0 to 4, not 9" in view.notice


def test_a_forks_view_names_its_parent_in_its_header(host):
    rt, agent = conversation(host, 1)
    fork = host.call(lambda: agent.fork("alt", at=1))
    view = AgentView(fork, host)
    assert view.fork_origin == {"parent": "writer", "at": 1}
    assert "fork of **writer** at message 1" in view._repr_mimebundle_()[0]["text/markdown"]
    assert AgentView(agent, host).fork_origin == {}


def test_edit_replaces_the_transcript_in_the_view_and_keeps_the_old_branch(host):
    rt, agent = conversation(host)
    view = AgentView(agent, host)
    sent = opened(view)
    view._on_browser_message(view, {"kind": "edit", "index": 2, "text": "question 1, again"}, [])
    until(lambda: len(agent.history) == 4 and agent.history[2].text == "question 1, again"
          and not agent.is_running)
    host.call(lambda: None)
    shown = replay_as_the_browser_does(sent)
    assert [i["index"] for i in shown if i["kind"] == "text"] == [0, 1, 2, 3]
    assert "question 1, again" in texts(shown)[2] and "You said: question 1, again" in texts(shown)[3]
    assert len(host.call(agent.branches)) == 2


def test_edit_fetches_the_words_as_written_only_when_asked(host):
    rt, agent = conversation(host, 1)
    host.submit(agent.send("see `df.head()` and *this*")).result(10)
    view = AgentView(agent, host)
    sent = opened(view)
    assert all("text" not in item for m in sent if m.get("kind") == "items" for item in m["items"])
    view._on_browser_message(view, {"kind": "edit_source", "index": 2}, [])
    until(lambda: any(m.get("kind") == "source" for m in sent))
    assert [m for m in sent if m.get("kind") == "source"] == [
        {"kind": "source", "index": 2, "text": "see `df.head()` and *this*"}]


def test_an_edit_of_a_reply_says_why_it_cannot(host):
    rt, agent = conversation(host, 1)
    view = AgentView(agent, host)
    view._on_browser_message(view, {"kind": "edit", "index": 1, "text": "x"}, [])
    until(lambda: view.notice.startswith("could not edit"))
    assert "the model's reply" in view.notice


def test_a_rewind_to_a_longer_branch_redraws_the_whole_transcript(host):
    rt, agent = conversation(host, 3)
    view = AgentView(agent, host)
    sent = opened(view)
    host.call(lambda: agent.rewind(2))
    host.submit(agent.send("short")).result(10)
    first = host.call(agent.branches)[0]
    host.call(lambda: agent.switch_branch(first.id))
    host.call(lambda: None)
    shown = replay_as_the_browser_does(sent)
    assert len(shown) == 6 and "question 2" in texts(shown)[4]


def test_invalid_time_travel_clicks_are_ignored(host, caplog):
    rt, agent = conversation(host, 1)
    view = AgentView(agent, host)
    with caplog.at_level(logging.WARNING, logger="mentra_nb.notebook"):
        view._on_browser_message(view, {"kind": "fork", "at": -1, "name": "x"}, [])
        view._on_browser_message(view, {"kind": "fork", "at": 1, "name": "no spaces"}, [])
        view._on_browser_message(view, {"kind": "edit", "index": 0, "text": ""}, [])
    assert caplog.text.count("ignored an invalid message") == 3
    assert host.call(lambda: [a.name for a in rt.agents]) == ["writer"]
