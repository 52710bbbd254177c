"""Issue 15.7 and 15.9 in a real JupyterLab.

- Run All: a view gets its transcript while later cells still run (the kernel
  answers no widget request until the queue is empty, so nothing may wait for one).
- Saved outputs: a `%%mentra` cell's output becomes its turn's transcript when the
  turn ends, so the saved notebook, reopened with no kernel, shows it (and no
  "Error displaying widget: model not found").
"""

from __future__ import annotations

import json

from playwright.sync_api import expect

from tests.browser.notebook_page import poll

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"
# A cell that keeps the kernel busy until the test says so (no timing margins).
HOLD = ("import pathlib, time\n"
        "while not pathlib.Path('release-{name}').exists():\n"
        "    time.sleep(0.05)")


def test_run_all_shows_each_transcript_while_later_cells_still_run(notebook):
    nb = notebook.open([
        SETUP,
        "writer = %mentra spawn writer\nwriter",
        "%%mentra writer\nThe first question",
        HOLD.format(name="run-all"),
        "%mentra send writer --wait The second question",
    ])
    nb.menu("Run", "Run All Cells")
    # The hold cell is still running: the kernel has answered no widget request yet.
    expect(nb.cell(3).locator(".jp-InputArea-prompt")).to_have_text("[*]:", timeout=60_000)
    expect(nb.output(2)).to_contain_text("You said: The first question", timeout=60_000)
    full = nb.agent_view(1)
    expect(full.locator(".mentra-transcript")).to_contain_text("You said: The first question")
    expect(nb.cell(3).locator(".jp-InputArea-prompt")).to_have_text("[*]:")  # still held
    (nb.server.root / "release-run-all").write_text("")
    nb.wait_cell(4)
    expect(nb.output(4)).to_contain_text("You said: The second question")
    expect(full.locator(".mentra-transcript")).to_contain_text("You said: The second question")
    # Each turn cell shows its own turn only.
    expect(nb.output(2)).not_to_contain_text("The second question")


def test_a_saved_notebook_reopened_without_a_kernel_shows_each_turn(notebook, lab_server):
    nb = notebook.open([
        SETUP,
        "writer = %mentra spawn writer",
        "%%mentra writer\nWhat lives in a **tide pool**?",
        "%%mentra writer --wait\nAnd in the deep sea?",
    ])
    nb.run_all(4)
    expect(nb.output(2)).to_contain_text("You said: What lives in a tide pool?", timeout=30_000)
    expect(nb.output(3)).to_contain_text("You said: And in the deep sea?")
    nb.page.keyboard.press("Control+s")
    saved = lab_server.root / nb.name
    # Wait for the save to land, then shut the kernel down for good.
    def saved_outputs() -> str:
        return json.dumps(json.loads(saved.read_text())["cells"][2]["outputs"])

    poll(lambda: "You said: What lives in a" in saved_outputs(), message="the save to land")
    # No widget is left in the saved file for a reader without a kernel to miss.
    assert "application/vnd.jupyter.widget-view+json" not in saved.read_text()
    for session in lab_server.api("GET", "sessions"):
        if session["path"] == nb.name:
            lab_server.api("DELETE", f"sessions/{session['id']}")

    # Reopen a copy that names no kernel JupyterLab can start: it opens with none.
    reopened = "reopened-" + nb.name
    data = json.loads(saved.read_text())
    data["metadata"]["kernelspec"] = {"name": "no-such-kernel", "display_name": "none", "language": "none"}
    data["metadata"].pop("language_info", None)
    (lab_server.root / reopened).write_text(json.dumps(data))
    nb.page.goto(lab_server.url(reopened))
    dialog = nb.page.locator(".jp-Dialog")
    expect(dialog).to_be_visible(timeout=60_000)  # "Select Kernel"
    dialog.locator(".jp-Dialog-button").get_by_text("No Kernel", exact=True).click()
    panel = nb.page.locator(".jp-NotebookPanel")
    outputs = panel.locator(".jp-Cell .jp-OutputArea")
    expect(outputs.nth(2)).to_contain_text("You said: What lives in a tide pool?", timeout=30_000)
    # Rendered as markdown (the prompt's and the echo's **tide pool**), not shown as source.
    expect(outputs.nth(2).locator("strong").filter(has_text="tide pool")).to_have_count(2)
    expect(outputs.nth(3)).to_contain_text("You said: And in the deep sea?")
    expect(panel).not_to_contain_text("model not found")
    expect(panel).not_to_contain_text("Error displaying widget")
