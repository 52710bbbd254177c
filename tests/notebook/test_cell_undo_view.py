"""Undo in the conversation's view (kernel side): the view says which turns changed
cells (`changed_cells_at`), and its `undo` message reverts the cell changes from
the turn beginning at message `first` on and rewinds to before it; the view's
notice says what it did. js/agent_view.test.js checks the button sends it."""

from __future__ import annotations

import asyncio

import pytest

from mentra_nb import Runtime
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook.agent_view import AgentView, TurnScope
from mentra_nb.testing import ScriptedProvider, text_stream
from tests.conftest import until
from tests.runtime.test_cells import ListNotebook, call


@pytest.fixture
def host():
    h = RuntimeHost()
    yield h
    h.stop()


def test_undo_in_the_conversations_view_reverts_a_turns_cells_and_rewinds_to_before_it(host):
    notebook = ListNotebook("x = 1")
    provider = ScriptedProvider("scripted", [call("insert_cell", '{"source": "a"}', "c1"), text_stream("one"),
                                             call("insert_cell", '{"source": "b"}', "c2"), text_stream("two")])
    rt = host.call(lambda: Runtime.empty(providers=[provider], notebook=notebook))
    agent = host.call(lambda: rt.spawn("writer", "scripted:m"))
    host.submit(agent.send("first")).result(10)
    host.submit(agent.send("second")).result(10)
    view = AgentView(agent, host)
    # Each insert was made while the history had 2 (then 6) messages: in the turns from 0 and 4.
    assert view.changed_cells_at == [2, 6]

    view._on_browser_message(view, {"kind": "undo", "first": 4}, [])

    until(lambda: view.notice != "")
    assert view.notice == ("undone: the conversation goes on from its first 4 messages; "
                           "cells: deleted the cells it inserted: a2")
    assert [c.source for c in notebook.list] == ["x = 1", "a"]
    assert [m.text for m in agent.history][-1] == "one" and len(agent.history) == 4
    until(lambda: view.changed_cells_at == [2])  # only the first turn's change is left to undo


def test_a_turns_view_names_no_turn_to_undo(host):
    notebook = ListNotebook()
    provider = ScriptedProvider("scripted", [call("insert_cell", '{"source": "a"}', "c1"), text_stream("one")])
    rt = host.call(lambda: Runtime.empty(providers=[provider], notebook=notebook))
    agent = host.call(lambda: rt.spawn("writer", "scripted:m"))
    host.submit(agent.send("first")).result(10)
    assert AgentView(agent, host).changed_cells_at == [2]
    # Its turn is over (and it is replaced by markdown) before an Undo there could act.
    assert AgentView(agent, host, turn=TurnScope(first=0, generation=1)).changed_cells_at == []


def test_undo_of_a_running_turn_says_why_it_cannot(host):
    notebook = ListNotebook()
    provider = ScriptedProvider("scripted", [call("insert_cell", '{"source": "a"}', "c1"), text_stream("one")])
    rt = host.call(lambda: Runtime.empty(providers=[provider], notebook=notebook))
    agent = host.call(lambda: rt.spawn("writer", "scripted:m"))
    gate = host.call(asyncio.Event)  # holds the insert, so the turn is still running when Undo comes
    original = notebook.insert

    async def held_insert(*args):
        await gate.wait()
        return await original(*args)

    notebook.insert = held_insert
    running = host.submit(agent.send("first"))
    until(lambda: agent.is_running)
    view = AgentView(agent, host)
    view._on_browser_message(view, {"kind": "undo", "first": 0}, [])
    until(lambda: view.notice != "")
    assert view.notice.startswith("could not undo:")
    host.call(gate.set)
    running.result(10)
    assert [c.source for c in notebook.list] == ["a"]
