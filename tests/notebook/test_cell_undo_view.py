"""The Undo button of a turn's view (kernel side): the view's `undo_turn` message
reverts the cell changes from its turn on and rewinds to before it, and the view
says what it did. js/agent_view.test.js checks the button sends it."""

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


def test_undo_in_a_turns_view_reverts_that_turns_cells_and_rewinds_to_before_it(host):
    notebook = ListNotebook("x = 1")
    provider = ScriptedProvider("scripted", [call("insert_cell", '{"source": "a"}', "c1"), text_stream("one"),
                                             call("insert_cell", '{"source": "b"}', "c2"), text_stream("two")])
    rt = host.call(lambda: Runtime.empty(providers=[provider], notebook=notebook))
    agent = host.call(lambda: rt.spawn("writer", "scripted:m"))
    host.submit(agent.send("first")).result(10)
    host.submit(agent.send("second")).result(10)
    view = AgentView(agent, host, turn=TurnScope(first=4, generation=2))

    view._on_browser_message(view, {"kind": "undo_turn"}, [])

    until(lambda: view.notice != "")
    assert view.notice == ("undone: the conversation goes on from its first 4 messages; "
                           "cells: deleted the cells it inserted: a2")
    assert [c.source for c in notebook.list] == ["x = 1", "a"]
    assert [m.text for m in agent.history][-1] == "one" and len(agent.history) == 4


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
    view = AgentView(agent, host, turn=TurnScope(first=0, generation=1))
    view._on_browser_message(view, {"kind": "undo_turn"}, [])
    until(lambda: view.notice != "")
    assert view.notice.startswith("could not undo:")
    host.call(gate.set)
    running.result(10)
    assert [c.source for c in notebook.list] == ["a"]
