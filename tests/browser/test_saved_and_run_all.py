"""Issue 15.7 and 15.9 in a real JupyterLab.

- Run All: a view gets its transcript while later cells still run (the kernel
  answers no widget request until the queue is empty, so nothing may wait for one).
- Saved outputs: a `%%mentra` cell's output becomes its turn's transcript when the
  turn ends, so the saved notebook, reopened with no kernel, shows it (and no
  "Error displaying widget: model not found").
"""

from __future__ import annotations

import json
import subprocess
import sys

from playwright.sync_api import expect

from tests.browser.notebook_page import poll, saved_outputs

VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"
SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"
# A live view's markdown copy, in a cell's output area: the output just above the
# widget's, which is the cell's last (plain markdown, no wrapper: issue 36.6).
_OUTPUT = "div[contains(concat(' ', @class, ' '), ' jp-OutputArea-child ')]"
FALLBACK = (f"xpath=./{_OUTPUT}[following-sibling::{_OUTPUT}][not(following-sibling::{_OUTPUT}[2])]"
            "//div[contains(concat(' ', @class, ' '), ' jp-RenderedMarkdown ')]")
# ... and in a saved notebook reopened, which holds no widget output of ours (issue
# 30.4), the cell's last output.
SAVED_COPY = (f"xpath=./{_OUTPUT}[not(following-sibling::{_OUTPUT})]"
              "//div[contains(concat(' ', @class, ' '), ' jp-RenderedMarkdown ')]")
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
    poll(lambda: "You said: What lives in a" in json.dumps(saved_outputs(saved, 2)), message="the save to land")
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


def test_a_spawn_cell_saved_with_its_live_view_reads_well_when_reopened(notebook, lab_server, tmp_path):
    """Issue 15.7 for full views: the spawn cell keeps a live widget, so what the
    saved notebook keeps is the markdown above it (refreshed at each turn's end,
    without redrawing the widget), and a placeholder widget state, so a new kernel
    finds the model: the transcript shows and no "model not found". The same for a
    TeamView and a subagent picker."""
    nb = notebook.open([
        SETUP,
        "%mentra spawn writer",
        "%%mentra writer\nWhat lives in a **tide pool**?",
        "lead = %mentra spawn lead --team --subagents\n%mentra team lead",
        "%mentra subagents lead",
    ])
    nb.run_all(2)
    spawn = nb.agent_view(1)
    expect(spawn).to_be_visible()
    fallback = nb.output(1).locator(FALLBACK)
    expect(fallback).to_be_hidden()  # the live view shows the conversation; its copy waits
    draft = spawn.locator("textarea")
    draft.fill("a draft the reader is typing")
    nb.run_cell(2)
    expect(spawn.locator(".mentra-transcript")).to_contain_text("You said: What lives in a tide pool?",
                                                                timeout=30_000)
    # The copy above the view was replaced at the turn's end; the view was not redrawn.
    poll(lambda: "You said: What lives in a tide pool?" in (fallback.text_content() or ""),
         message="the spawn cell's markdown to be refreshed")
    expect(fallback).to_be_hidden()
    expect(draft).to_have_value("a draft the reader is typing")
    nb.run_cell(3)
    nb.run_cell(4)
    for index, view in ((3, ".mentra-team"), (4, ".mentra-picker")):
        expect(nb.output(index).locator(view)).to_be_visible()
        expect(nb.output(index).locator(FALLBACK)).to_be_hidden()

    nb.page.keyboard.press("Control+s")
    saved = lab_server.root / nb.name

    def saved_spawn_outputs() -> list[dict]:
        return saved_outputs(saved, 1)

    poll(lambda: "You said: What lives in a" in json.dumps(saved_spawn_outputs()), message="the save to land")
    data = json.loads(saved.read_text())
    # The file holds no widget output of ours (issue 30.4: tests/browser/test_reopened.py),
    # and no widget state for them: each view's copy keeps its widget output in its
    # metadata, for a page reloaded while the kernel runs.
    for index in (1, 3, 4):
        [copy] = [o for o in data["cells"][index]["outputs"] if "mentra" in o.get("metadata", {})]
        assert VIEW not in copy["data"] and "".join(copy["data"]["text/markdown"]).startswith("**")
        view = copy["metadata"]["mentra"]["view"]
        assert "".join(view["data"]["text/plain"]).endswith("· live view; saved as the markdown above")
        assert not any(VIEW in o.get("data", {}) for o in data["cells"][index]["outputs"])
    assert not data["metadata"].get("widgets", {}).get(STATE, {}).get("state")
    for session in lab_server.api("GET", "sessions"):
        if session["path"] == nb.name:
            lab_server.api("DELETE", f"sessions/{session['id']}")

    # Reopened with no kernel at all.
    no_kernel = "no-kernel-" + nb.name
    data["metadata"]["kernelspec"] = {"name": "no-such-kernel", "display_name": "none", "language": "none"}
    data["metadata"].pop("language_info", None)
    (lab_server.root / no_kernel).write_text(json.dumps(data))
    nb.page.goto(lab_server.url(no_kernel))
    dialog = nb.page.locator(".jp-Dialog")
    expect(dialog).to_be_visible(timeout=60_000)
    dialog.locator(".jp-Dialog-button").get_by_text("No Kernel", exact=True).click()
    panel = nb.page.locator(".jp-NotebookPanel")
    spawn_output = panel.locator(".jp-Cell .jp-OutputArea").nth(1)
    expect(spawn_output).to_contain_text("You said: What lives in a tide pool?", timeout=30_000)
    expect(panel.locator(".jp-Cell .jp-OutputArea").nth(3).locator(SAVED_COPY)).to_contain_text(
        "team of lead")
    expect(panel.locator(".jp-Cell .jp-OutputArea").nth(4).locator(SAVED_COPY)).to_contain_text(
        "lead · 0 subagents")
    expect(panel).not_to_contain_text("model not found")

    # Reopened the usual way: JupyterLab starts a new kernel, which has no such model.
    reopened = "fresh-kernel-" + nb.name
    (lab_server.root / reopened).write_text(saved.read_text())
    nb.page.goto(lab_server.url(reopened))
    nb.wait_kernel_idle()
    panel = nb.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    spawn_output = panel.locator(".jp-Cell .jp-OutputArea").nth(1)
    expect(spawn_output).to_contain_text("You said: What lives in a tide pool?", timeout=30_000)
    expect(spawn_output.locator(SAVED_COPY)).to_be_visible()
    for index, text in ((3, "team of lead"), (4, "lead · 0 subagents")):
        output = panel.locator(".jp-Cell .jp-OutputArea").nth(index)
        expect(output.locator(SAVED_COPY)).to_contain_text(text)
        expect(output.locator(SAVED_COPY)).to_be_visible()
    # No widget output was saved for the new kernel's manager to look for.
    expect(panel.locator(".jp-OutputArea-output:not([data-mime-type])")).to_have_count(0)
    expect(panel).not_to_contain_text("model not found")
    expect(panel).not_to_contain_text("Error displaying widget")
    for session in lab_server.api("GET", "sessions"):
        if session["path"] == reopened:
            lab_server.api("DELETE", f"sessions/{session['id']}")

    # nbconvert --to html: the transcript, as HTML.
    html = tmp_path / "saved.html"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(saved),
                    "--output", str(html)], check=True, capture_output=True, timeout=120)
    page = html.read_text()
    assert "You said: What lives in a <strong>tide pool</strong>?" in page
    assert "team of lead" in page and "0 subagents" in page
    assert "model not found" not in page


def test_a_notebook_run_by_nbconvert_reopens_with_each_full_view_as_its_transcript(notebook, lab_server):
    """A headless run (nbconvert, papermill) writes a notebook JupyterLab does not
    trust, so it renders no widget from it: the full views' cells read as their
    markdown and nothing else (nothing stale, no error, no line about the widget)."""
    from tests.browser.notebook_page import write_notebook

    name = "headless-" + notebook.name
    write_notebook(lab_server.root / name, [
        SETUP, "%mentra spawn writer", "%mentra send writer --wait What lives in a tide pool",
        "%mentra show writer"])
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--inplace",
                    name], cwd=lab_server.root, check=True, capture_output=True, timeout=300)
    data = json.loads((lab_server.root / name).read_text())
    assert data["metadata"]["widgets"][STATE]["state"], "nbconvert saved no widget state"
    notebook.page.goto(lab_server.url(name))
    notebook.wait_kernel_idle()
    panel = notebook.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    for index in (1, 3):
        output = panel.locator(".jp-Cell .jp-OutputArea").nth(index)
        expect(output.locator(FALLBACK)).to_contain_text("You said: What lives in a tide pool",
                                                                   timeout=30_000)
        expect(output.locator(FALLBACK)).to_be_visible()
        expect(output).not_to_contain_text("live view")
        expect(output).not_to_contain_text("0 messages")  # nothing of the view's state when shown
    expect(panel).not_to_contain_text("model not found")
    expect(panel).not_to_contain_text("Error displaying widget")

