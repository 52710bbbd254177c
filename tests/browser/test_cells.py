"""Issue 29: an agent works in the notebook's real cells, in JupyterLab 4 and Notebook 7.

A scripted model reads the live notebook (a line the user typed and did not save
included), inserts a markdown and a code cell, edits the user's cell once the
user approved in a box that showed the diff, and runs three of the user's cells
after approving each: the cells show their In [n] and outputs (a printed line, a
matplotlib PNG, an exception) and the model receives them (the PNG as an image
block). The cells it touched carry its mark in their metadata and a badge; saved
and reloaded, the marks are still there.
"""

from __future__ import annotations

import json
import re

import nbformat
from playwright.sync_api import expect

from tests.browser.notebook_page import NotebookPage, poll

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"

MODELS = '''
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

provider = ScriptedProvider("cells", [
    tool_use_stream("c1", "read_notebook", "{}"),
    tool_use_stream("c2", "insert_cell", '{"source": "## Notes by the agent", "kind": "markdown", "after": "user-data"}'),
    tool_use_stream("c3", "insert_cell", '{"source": "y = x * 2", "kind": "code"}'),
    tool_use_stream("c4", "edit_cell", '{"cell": "user-data", "old": "x = 1", "new": "x = 41 + 1"}'),
    tool_use_stream("c5", "run_cell", '{"cell": "user-data"}'),
    tool_use_stream("c6", "run_cell", '{"cell": "user-plot"}'),
    tool_use_stream("c7", "run_cell", '{"cell": "user-boom"}'),
    text_stream("Done in the notebook."),
])
nb.session().runtime.providers.register(provider)

def results():
    """What the model received from each tool call: (text, is_error, images)."""
    seen = []
    for request in provider.requests:
        for block in request.messages[-1].content:
            if block.type == "tool_result":
                seen.append((block.content, block.is_error, len(block.images)))
    return seen[-7:]
'''

PLOT = ("import matplotlib.pyplot as plt\n%matplotlib inline\n"
        "plt.plot([1, 3, 2])\nplt.title('agent plot')\nplt.show()")


def _notebook(path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    cells = [("setup", "code", SETUP), ("models", "code", MODELS),
             ("user-data", "code", "x = 1\nprint('x is', x)"), ("user-plot", "code", PLOT),
             ("user-boom", "code", "raise ValueError('boom from the user cell')"),
             ("user-draft", "code", "# draft"),
             ("spawn", "code", "%mentra spawn writer --model cells:scripted"),
             ("ask", "code", "%%mentra writer\nWork in the notebook.")]
    for cell_id, kind, source in cells:
        cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
        cell.id = cell_id
        nb.cells.append(cell)
    nbformat.write(nb, path)


def _cell(nb: NotebookPage, cell_id: str):
    """The cell node of cell `cell_id` (the page tags each with its id: js/cell_marks.js)."""
    return nb.page.locator(f'.jp-Notebook .jp-Cell[data-mentra-cell-id="{cell_id}"]')


def _approve(nb: NotebookPage, *expected: str) -> None:
    box = nb.page.locator(".mentra-approval").first
    expect(box).to_be_visible(timeout=30_000)
    for text in expected:
        expect(box).to_contain_text(text)
    box.locator("button.mentra-approve").click()
    # This approval is answered in every view. Not `box` again: the locator finds the first
    # box anew, which is the next approval once the run goes on past this one.
    answered = nb.page.locator(".mentra-approval")
    for text in expected:
        answered = answered.filter(has_text=text)
    expect(answered.locator("button.mentra-approve")).to_have_count(0, timeout=30_000)


def _works_in_the_notebook(nb: NotebookPage) -> None:
    path = nb.server.root / nb.name
    _notebook(path)
    nb.open_existing()
    nb.run_all(2)
    nb.run_cell(6)
    expect(nb.output(6).locator(".mentra-agent")).to_be_visible()
    expect(nb.output(6)).not_to_contain_text("no cell tools")
    # An edit the user has not saved: the model must read it. (Typed after the spawn
    # cell: its view saves the notebook once, and a save racing the server's own
    # save of an edit asks whether to overwrite.)
    draft = nb.cell(5)
    draft.locator(".jp-InputArea-editor").click()
    nb.page.keyboard.press("End")
    nb.page.keyboard.type(" unsaved-edit-123")
    nb.run_cell(7, wait=False)

    _approve(nb, "edit_cell", "-x = 1", "+x = 41 + 1")
    _approve(nb, "run_cell", "x = 41 + 1")
    _approve(nb, "run_cell", "agent plot")
    _approve(nb, "run_cell", "boom from the user cell")
    expect(nb.page.locator(".mentra-agent").last).to_contain_text("Done in the notebook.", timeout=30_000)

    # The cells, as the user sees them.
    cells = nb.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(11)  # (Shift+Enter on the last cell added an empty one)
    expect(cells.nth(3)).to_have_class(re.compile("jp-MarkdownCell"))
    expect(cells.nth(3)).to_contain_text("Notes by the agent")
    expect(cells.last).to_contain_text("y = x * 2")
    data = _cell(nb, "user-data")
    expect(data).to_contain_text("x = 41 + 1")
    expect(data.locator(".jp-InputArea-prompt")).to_have_text(re.compile(r"\[\d+\]:"))
    expect(data.locator(".jp-OutputArea")).to_contain_text("x is 42")
    expect(_cell(nb, "user-plot").locator(".jp-OutputArea img")).to_have_count(1)
    boom = _cell(nb, "user-boom")
    expect(boom.locator(".jp-InputArea-prompt")).to_have_text(re.compile(r"\[\d+\]:"))
    expect(boom.locator(".jp-OutputArea")).to_contain_text("ValueError")

    # ... and as the model received them.
    results = nb.kernel.value("results()")
    read, _markdown, _code, edit, printed, plot, error = results
    assert "unsaved-edit-123" in read[0] and "cell user-data" in read[0]
    assert "edited cell user-data" in edit[0] and not edit[1]
    assert "x is 42" in printed[0] and re.search(r"In \[\d+\]", printed[0]) and not printed[1]
    assert plot[2] == 1 and not plot[1]
    assert "ValueError: boom from the user cell" in error[0] and error[1]

    # The turn view lists the cells it changed, each a link that scrolls to its cell.
    turn = nb.page.locator(".mentra-agent").last
    links = turn.locator(".mentra-cells-changed .mentra-cell-link")
    expect(links).to_have_count(5)
    nb.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").last.scroll_into_view_if_needed()
    links.filter(has_text="user-data").click()
    expect(_cell(nb, "user-data")).to_be_in_viewport()

    # The touched cells are marked (metadata and a badge); saved and reloaded, they still are.
    expect(nb.page.locator(".mentra-cell-badge")).to_have_count(5)
    nb.page.locator(".jp-NotebookPanel .jp-Notebook").first.click()  # the notebook has the focus
    nb.page.keyboard.press("Control+s")

    def saved_marks():
        try:
            cells = json.loads(path.read_text())["cells"]
        except ValueError:
            return None
        marks = [c["metadata"].get("mentra", {}).get("agent") for c in cells]
        return marks if marks.count("writer") == 5 else None

    marks = poll(saved_marks, message="the saved notebook to hold five marked cells")
    assert marks[2:6] == ["writer"] * 4 and marks[-1] == "writer"  # (the data cell, notes, plot, boom; y = …)
    nb.forget_kernel()
    nb.open_existing()
    expect(nb.page.locator(".mentra-cell-badge")).to_have_count(5, timeout=30_000)
    expect(nb.page.locator(".mentra-cell-badge").first).to_contain_text("writer")


def test_an_agent_reads_inserts_edits_and_runs_cells_in_jupyterlab(notebook):
    _works_in_the_notebook(notebook)


def test_an_agent_reads_inserts_edits_and_runs_cells_in_notebook_7(notebook7):
    _works_in_the_notebook(notebook7)


def test_the_tutorial_works_in_the_notebook_in_jupyterlab(notebook):
    """notebooks/09 under nbval shows the headless path; here, the live one."""
    notebook.name = "09-agent-in-the-notebook.ipynb"
    nb = notebook.open_existing()
    nb.menu("Run", "Run All Cells")
    _approve(nb, "run_cell", "Revenue by month")
    expect(nb.page.locator(".mentra-agent").last).to_contain_text("March is the best month", timeout=30_000)
    panel = nb.page.locator(".jp-NotebookPanel")
    expect(panel.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]')).to_have_count(0)
    expect(panel.locator(".jp-Cell").last).to_contain_text('growth = revenue["mar"]')
    expect(panel.locator(".mentra-cell-badge")).to_have_count(3)  # two inserted cells, the plot it ran
    assert nb.kernel.value("cells_here") is True
    assert nb.kernel.value("[c.tool for c in load_cell_changes(analyst.services.store, analyst.id)]") == \
        ["insert_cell", "insert_cell"]
