"""Undo of an agent's cell changes (runtime/cell_tools/_undo.py) over the list-backed
notebook of test_cells.py: what is reverted, what is left alone and named, and that
an undo is recorded so the next one does not do it again.
tests/browser/test_cell_undo.py does it in JupyterLab, kernel restart included."""

from __future__ import annotations

from mentra_nb import AgentConfig, SqliteStore
from mentra_nb.runtime.cell_tools import (
    CellMark,
    LeftAlone,
    cell_changes_after,
    last_prompt,
    revert_cell_changes,
    rewind_with_cells,
)
from mentra_nb.testing import text_stream
from tests.runtime import test_cells
from tests.runtime.test_cells import ListNotebook, call

make = test_cells.make  # the fixture: a runtime over a ListNotebook with a scripted model

ALLOWED = AgentConfig(auto_approve=["edit_cell", "delete_cell"])


async def undo(agent, notebook, after_message: int):
    services = agent.services
    return await revert_cell_changes(services.store, agent.id, notebook, after_message,
                                     CellMark(agent=agent.name, run=agent.snapshot.run_generation),
                                     token=services.token)


def sources(notebook: ListNotebook) -> list[str]:
    return [cell.source for cell in notebook.list]


async def test_undo_deletes_inserts_restores_edits_puts_deleted_cells_back_and_names_the_users_cell(make):
    notebook = ListNotebook("x = 1", "y = 2", "z = 3")
    agent, _provider, _rt = make(
        notebook,
        call("insert_cell", '{"source": "# Notes", "kind": "markdown", "after": "u0"}', "c1"),
        call("insert_cell", '{"source": "plot(x)"}', "c2"),
        call("edit_cell", '{"cell": "u0", "old": "x = 1", "new": "x = 10"}', "c3"),
        call("delete_cell", '{"cell": "u1"}', "c4"),
        text_stream("done"), config=ALLOWED)
    await agent.send("work in the notebook")
    assert sources(notebook) == ["x = 10", "# Notes", "z = 3", "plot(x)"]
    notebook.list[3] = notebook.list[3].model_copy(update={"source": "plot(x, y)"})  # the user's edit

    done = await undo(agent, notebook, 0)

    assert sources(notebook) == ["x = 1", "y = 2", "z = 3", "plot(x, y)"]
    assert notebook.list[1].kind == "code"
    assert (done.deleted, done.restored, done.reinserted) == (["a1"], ["u0"], [notebook.list[1].id])
    assert done.left_alone == [LeftAlone(cell_id="a2", why="changed")]
    assert "left alone, changed by you since: a2" in done.summary()


async def test_an_undo_reverts_only_what_came_after_the_checkpoint_and_never_twice(make):
    notebook = ListNotebook("x = 1")
    agent, _provider, _rt = make(
        notebook, call("insert_cell", '{"source": "first"}', "c1"), text_stream("one"),
        call("insert_cell", '{"source": "second"}', "c2"),
        call("edit_cell", '{"cell": "a1", "old": "first", "new": "first, edited"}', "c3"), text_stream("two"))
    await agent.send("one")
    checkpoint = len(agent.history)
    await agent.send("two")
    assert sources(notebook) == ["x = 1", "first, edited", "second"]
    assert cell_changes_after(agent.services.store, agent.id, checkpoint) == 2

    done = await undo(agent, notebook, checkpoint)
    assert sources(notebook) == ["x = 1", "first"]
    assert (done.deleted, done.restored, done.left_alone) == (["a2"], ["a1"], [])

    again = await undo(agent, notebook, checkpoint)
    assert again.reverted == 0 and again.left_alone == [] and again.summary() == "no cell changes to revert"
    assert cell_changes_after(agent.services.store, agent.id, checkpoint) == 0
    everything = await undo(agent, notebook, 0)
    assert sources(notebook) == ["x = 1"] and everything.deleted == ["a1"]


async def test_a_cell_the_user_deleted_is_named_and_the_agents_earlier_changes_of_a_changed_cell_are_kept(make):
    notebook = ListNotebook("x = 1")
    agent, _provider, _rt = make(
        notebook, call("insert_cell", '{"source": "a"}', "c1"), call("insert_cell", '{"source": "b"}', "c2"),
        call("edit_cell", '{"cell": "a2", "old": "b", "new": "bb"}', "c3"), text_stream("ok"))
    await agent.send("go")
    del notebook.list[1]  # the user deleted a1
    notebook.list[1] = notebook.list[1].model_copy(update={"source": "bb and mine"})

    done = await undo(agent, notebook, 0)

    # a2's edit and its insert are both left: deleting it would delete the user's text.
    assert sources(notebook) == ["x = 1", "bb and mine"]
    assert done.reverted == 0
    assert sorted(done.left_alone, key=lambda c: c.cell_id) == [
        LeftAlone(cell_id="a1", why="gone"), LeftAlone(cell_id="a2", why="changed")]
    assert "no longer in the notebook: a1" in done.summary()


async def test_an_edited_then_deleted_cell_comes_back_with_its_first_text(make):
    notebook = ListNotebook("x = 1", "y = 2")
    agent, _provider, _rt = make(
        notebook, call("edit_cell", '{"cell": "u0", "old": "1", "new": "2"}', "c1"),
        call("delete_cell", '{"cell": "u0"}', "c2"), text_stream("ok"), config=ALLOWED)
    await agent.send("go")
    assert sources(notebook) == ["y = 2"]
    done = await undo(agent, notebook, 0)
    assert sources(notebook) == ["y = 2", "x = 1"]  # it was first: the end is the only place the protocol offers
    assert done.restored == done.reinserted == [notebook.list[1].id]


async def test_where_no_front_end_can_edit_cells_nothing_is_reverted_and_it_says_why(make):
    notebook = ListNotebook("x = 1")
    agent, _provider, _rt = make(notebook, call("insert_cell", '{"source": "mine"}'), text_stream("ok"))
    await agent.send("go")
    notebook.reason = "no notebook front end has answered"

    done = await undo(agent, notebook, 0)
    assert sources(notebook) == ["x = 1", "mine"] and done.reverted == 0
    assert done.summary() == "1 cell change(s) were not reverted: no notebook front end has answered"
    nowhere = await undo(agent, None, 0)
    assert nowhere.pending == 1 and "no notebook front end can edit cells here" in nowhere.summary()

    notebook.reason = None  # the page came back: the change is still there to revert
    assert (await undo(agent, notebook, 0)).deleted == ["a1"] and sources(notebook) == ["x = 1"]


async def test_the_undo_record_survives_a_new_runtime_on_the_same_file(make, db_path):
    notebook = ListNotebook()
    agent, _provider, rt = make(notebook, call("insert_cell", '{"source": "a"}'), text_stream("ok"))
    await agent.send("go")
    await undo(agent, notebook, 0)
    agent_id = agent.id
    await rt.aclose()
    assert cell_changes_after(SqliteStore(db_path), agent_id, 0) == 0


async def test_rewind_with_cells_takes_the_conversation_and_the_notebook_back_to_the_checkpoint(make):
    notebook = ListNotebook("x = 1")
    agent, _provider, rt = make(
        notebook, text_stream("hello"), call("insert_cell", '{"source": "plot(x)"}'), text_stream("added"))
    await agent.send("hi")
    await agent.send("add a plot")
    assert len(agent.history) == 6 and last_prompt(agent) == 2

    done = await rewind_with_cells(agent, last_prompt(agent))

    assert len(agent.history) == 2 and agent.history[-1].text == "hello"
    assert done.deleted == ["a1"] and sources(notebook) == ["x = 1"]


async def test_rewind_with_cells_where_no_notebook_can_edit_cells_still_rewinds_and_says_so(make):
    notebook = ListNotebook("x = 1")
    agent, _provider, _rt = make(notebook, call("insert_cell", '{"source": "plot(x)"}'), text_stream("added"))
    await agent.send("add a plot")
    notebook.reason = "no notebook front end has answered"
    done = await rewind_with_cells(agent, 0)
    assert agent.history == [] and sources(notebook) == ["x = 1", "plot(x)"]
    assert done.summary() == "1 cell change(s) were not reverted: no notebook front end has answered"
