"""`%%mentra NAME -f code` in JupyterLab: when the answer is done, its first code
block is a new cell right below the magic's cell (IPython's set_next_input
payload, which JupyterLab turns into a cell), and the turn view shows the answer."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.notebook_page import poll

SETUP = "%load_ext mentra_nb"


def code_cells(page) -> list[str]:
    """The source of every cell in the open notebook, as its editors show it."""
    return page.locator(".jp-Notebook .jp-Cell .jp-InputArea-editor").evaluate_all(
        "eds => eds.map(e => Array.from(e.querySelectorAll('.cm-line')).map(l => l.textContent).join('\\n'))")


def test_format_code_inserts_the_answers_first_code_block_as_the_next_cell_in_jupyterlab(notebook):
    # The offline model answers "You said: <prompt>", so the prompt's code block comes back.
    ask = "%%mentra coder -f code\nPlot it:\n```python\nimport math\nprint(math.tau)\n```\n```\nnot this one\n```"
    nb = notebook.open([SETUP, "%mentra spawn coder --model test", ask, "print('last cell')"])
    nb.run_all(2)
    before = code_cells(nb.page)
    nb.run_cell(2)

    def one_more() -> list[str] | None:
        cells = code_cells(nb.page)
        return cells if len(cells) == len(before) + 1 else None

    after = poll(one_more, message="the answer's code as a new cell")
    assert after[3] == "import math\nprint(math.tau)", after
    assert after[:3] == before[:3] and after[4] == "print('last cell')"
    expect(nb.output(2)).to_contain_text("You said: Plot it:")  # the turn, shown in its cell
    # The new cell runs like any other.
    nb.run_cell(3)
    expect(nb.output(3)).to_contain_text("6.283185307179586")


def test_format_code_without_a_code_block_adds_no_cell(notebook):
    nb = notebook.open([SETUP, "%mentra spawn coder --model test", "%%mentra coder -f code\njust words",
                        "print('last cell')"])
    nb.run_all(3)
    expect(nb.output(2)).to_contain_text("the answer has no code block, so no cell was added")
    assert code_cells(nb.page)[3:] == ["print('last cell')"]
