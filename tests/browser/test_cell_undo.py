"""Issue 29.2 in JupyterLab 4 and Notebook 7: undo reverts the agent's cell changes through the page.

A scripted model inserts a markdown and a code cell and edits the user's cell; the
user then edits the agent's code cell; undo deletes the markdown cell, restores
the user's cell and names the code cell the user changed, leaving it as it is. In
JupyterLab the user clicks Undo on the turn in the conversation's view (the spawn
cell's), which says what it did; in Notebook 7 the user runs `%mentra undo writer`. A second turn inserts another cell; after a real kernel restart
(Kernel → Restart Kernel…) and `%mentra resume`, undo deletes it, from the record
in the state file.
"""

from __future__ import annotations

import nbformat
from playwright.sync_api import expect

from tests.browser.notebook_page import NotebookPage

MODELS = '''
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

provider = ScriptedProvider("undo", [
    tool_use_stream("c1", "insert_cell", '{"source": "## Notes by the agent", "kind": "markdown", "after": "user-data"}'),
    tool_use_stream("c2", "insert_cell", '{"source": "y = x * 2"}'),
    tool_use_stream("c3", "edit_cell", '{"cell": "user-data", "old": "x = 1", "new": "x = 41 + 1"}'),
    text_stream("Turn one done."),
    tool_use_stream("c4", "insert_cell", '{"source": "z = 3"}'),
    text_stream("Turn two done."),
])
nb.session().runtime.providers.register(provider)
'''


def _notebook(path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    cells = [("setup", "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"), ("models", MODELS),
             ("user-data", "x = 1"),
             ("spawn", "%mentra spawn writer --model undo:scripted --auto-approve edit_cell"),
             ("ask", "%%mentra writer --wait\nWork in the notebook."),
             ("undo", "%mentra undo writer"),
             ("ask-again", "%%mentra writer --wait\nOne more cell."),
             ("after-restart", "%mentra resume\n%mentra undo writer")]
    for cell_id, source in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.id = cell_id
        nb.cells.append(cell)
    nbformat.write(nb, path)


def _sources(nb: NotebookPage) -> list[str]:
    cells = nb.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    return [cells.nth(i).locator(".jp-InputArea-editor").inner_text().strip() for i in range(cells.count())]


def _by_id(nb: NotebookPage, cell_id: str):
    return nb.page.locator(f'.jp-Notebook .jp-Cell[data-mentra-cell-id="{cell_id}"]')


def _cell_id(nb: NotebookPage, index: int) -> str:
    cell_id = nb.cell(index).get_attribute("data-mentra-cell-id")  # js/cell_marks.js tags every cell
    assert cell_id
    return cell_id


def test_undo_clicked_in_jupyterlab_leaves_the_users_edit_and_works_after_a_kernel_restart(notebook):
    _undo_leaves_the_users_edit_and_works_after_a_kernel_restart(notebook, click=True)


def test_undo_in_notebook_7_leaves_the_users_edit_and_works_after_a_kernel_restart(notebook7):
    _undo_leaves_the_users_edit_and_works_after_a_kernel_restart(notebook7, click=False)


def _undo_leaves_the_users_edit_and_works_after_a_kernel_restart(nb: NotebookPage, *, click: bool) -> None:
    _notebook(nb.server.root / nb.name)
    nb.open_existing()
    nb.run_all(4)
    expect(nb.output(3)).not_to_contain_text("no cell tools")
    nb.run_cell(4)
    expect(nb.output(4)).to_contain_text("Turn one done.")
    cells = nb.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(10)
    expect(nb.cell(3)).to_contain_text("Notes by the agent")
    expect(nb.cell(2)).to_contain_text("x = 41 + 1")
    expect(nb.cell(9)).to_contain_text("y = x * 2")
    notes, mine = _cell_id(nb, 3), _cell_id(nb, 9)

    # The user changes the agent's code cell (not saved, not run).
    nb.cell(9).locator(".jp-InputArea-editor").click()
    nb.page.keyboard.press("End")
    nb.page.keyboard.type("  # mine")
    expect(nb.cell(9)).to_contain_text("y = x * 2  # mine")

    if click:  # Undo on the turn (its first message, 0) in the conversation's view
        view = _by_id(nb, "spawn").locator(".mentra-agent")
        undo = view.locator(".mentra-undo-cells")
        expect(undo).to_have_count(1)  # one turn, which changed cells
        view.locator('.mentra-message-actions[data-index="0"] .mentra-undo-cells').click()
        out = view.locator(".mentra-time-travel-notice")
        expect(out).to_contain_text("undone: the conversation goes on from its first 0 messages", timeout=60_000)
        expect(undo).to_have_count(0)  # nothing left to undo
    else:
        nb.run_cell(6, wait=False)  # the undo cell: it moves up when the notes cell above it goes
        out = _by_id(nb, "undo").locator(".jp-OutputArea")
        expect(out).to_contain_text("'writer' goes on from its first 0 messages", timeout=60_000)
    expect(out).to_contain_text(f"deleted the cells it inserted: {notes}")
    expect(out).to_contain_text("restored: user-data")
    expect(out).to_contain_text(f"left alone, changed by you since: {mine}")
    expect(cells).to_have_count(9)
    sources = _sources(nb)
    assert sources[2] == "x = 1" and sources[-1] == "y = x * 2  # mine"
    assert sources[3].startswith("%mentra spawn"), sources  # the notes cell under user-data is gone
    assert nb.kernel.value("len(nb.session().agent('writer').history)") == 0

    # A second turn, then a real kernel restart: the record is in the state file.
    nb.run_cell(6)
    expect(nb.output(6)).to_contain_text("Turn two done.")
    expect(cells).to_have_count(10)
    expect(cells.last).to_contain_text("z = 3")
    added = _cell_id(nb, 9)
    nb.menu("Kernel", "Restart Kernel…")
    nb.page.locator(".jp-Dialog-button").get_by_text("Restart", exact=True).click()
    nb.forget_kernel()
    nb.wait_kernel_idle()
    nb.run_all(2)
    nb.run_cell(7)
    out = nb.output(7)
    expect(out).to_contain_text(f"deleted the cells it inserted: {added}")
    expect(out).to_contain_text(f"left alone, changed by you since: {mine}")
    expect(cells).to_have_count(9)
    assert _sources(nb)[-1] == "y = x * 2  # mine" and _sources(nb)[2] == "x = 1"
