"""`%mentra undo` and `%mentra rewind --with-cells` in an IPython shell. No page
can edit cells here, so the tests give the runtime the list-backed notebook of
tests/runtime/test_cells.py for the agent to work in; with the session's own
bridge back (no page answers it), undo says so and still rewinds the
conversation. tests/browser/test_cell_undo.py does it in JupyterLab."""

from __future__ import annotations

from mentra_nb.runtime.cell_tools import CellsExtension
from mentra_nb.testing import ScriptedProvider, text_stream
from tests.notebook.conftest import mentra
from tests.runtime.test_cells import ListNotebook, call


def _writer(ip, session, notebook, *scripts):
    session.runtime.providers.register(ScriptedProvider("scripted", list(scripts)))
    extension = session.runtime.services.extension(CellsExtension)
    extension.use(notebook)
    return mentra(ip, "spawn writer --model scripted:m --cells --auto-approve edit_cell"), extension


def test_undo_reverts_the_last_turns_cells_names_the_one_you_changed_and_rewinds(ip, session, capsys):
    notebook = ListNotebook("x = 1")
    agent, _extension = _writer(
        ip, session, notebook, text_stream("hello"),
        call("insert_cell", '{"source": "# Plot"}', "c1"), call("insert_cell", '{"source": "plot(x)"}', "c2"),
        call("edit_cell", '{"cell": "u0", "old": "x = 1", "new": "x = 2"}', "c3"), text_stream("done"))
    mentra(ip, "send writer --wait hi")
    mentra(ip, "send writer --wait plot it")
    notebook.list[2] = notebook.list[2].model_copy(update={"source": "plot(x)  # mine"})
    capsys.readouterr()

    mentra(ip, "undo writer")

    out = capsys.readouterr().out
    assert [c.source for c in notebook.list] == ["x = 1", "plot(x)  # mine"]
    assert "'writer' goes on from its first 2 messages; the 8 after it stay a branch" in out
    assert "cells: deleted the cells it inserted: a1; restored: u0; left alone, changed by you since: a2" in out
    assert [m.text for m in agent.history] == ["hi", "hello"]


def test_rewind_says_which_cell_changes_stay_and_with_cells_reverts_them(ip, session, capsys):
    notebook = ListNotebook()
    agent, _extension = _writer(ip, session, notebook, call("insert_cell", '{"source": "a"}'), text_stream("ok"))
    mentra(ip, "send writer --wait add a")
    capsys.readouterr()
    mentra(ip, "rewind writer 1")
    out = capsys.readouterr().out
    assert "the 1 cell change(s) it made after message 1 stay in the notebook; " \
           "%mentra undo writer --to 1 reverts them" in out
    assert [c.source for c in notebook.list] == ["a"]
    mentra(ip, "rewind writer 0 --with-cells")
    assert "cells: deleted the cells it inserted: a1" in capsys.readouterr().out
    assert notebook.list == [] and agent.history == []


def test_where_no_page_can_edit_cells_undo_says_so_and_still_rewinds(ip, session, capsys):
    notebook = ListNotebook()
    agent, extension = _writer(ip, session, notebook, call("insert_cell", '{"source": "a"}'), text_stream("ok"))
    mentra(ip, "send writer --wait add a")
    extension.use(session.cell_bridge)  # the kernel's own bridge: no page answers it here
    capsys.readouterr()

    mentra(ip, "undo writer")

    out = capsys.readouterr().out
    assert "'writer' goes on from its first 0 messages" in out
    assert "cells: 1 cell change(s) were not reverted: no notebook front end has answered" in out
    assert [c.source for c in notebook.list] == ["a"] and agent.history == []
