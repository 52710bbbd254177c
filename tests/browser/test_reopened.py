"""Issue 30.4: a saved notebook reopened with a new kernel or with No Kernel reads
as its markdown and nothing else, in JupyterLab 4 and Notebook 7.

A notebook JupyterLab saved is trusted, so it renders the widget outputs in it:
with a new kernel each live view left a red broken-widget icon under its
markdown, and with No Kernel every view showed "Loading widget…" for ever
(JupyterLab's renderer shows that before it looks for the model). The page now
saves no widget output of ours: a live view's markdown copy stands for it (a
page reloaded while the kernel still runs puts the widget back).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from playwright.sync_api import expect

from tests.browser.notebook_page import poll
from tests.browser.test_saved_and_run_all import FALLBACK

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"
VIEW = "application/vnd.jupyter.widget-view+json"
CELLS = [
    SETUP,
    "%mentra spawn writer",
    "%%mentra writer\nWhat lives in a **tide pool**?",
    "lead = %mentra spawn lead --team --subagents\n%mentra team lead",
    "%mentra subagents lead",
]
# What each cell's saved markdown says.
READS = {1: "You said: What lives in a tide pool?", 2: "You said: What lives in a tide pool?",
         3: "team of lead", 4: "lead · 0 subagents"}


def _shut_down(server, name: str) -> None:
    for session in server.api("GET", "sessions"):
        if session["path"] == name:
            server.api("DELETE", f"sessions/{session['id']}")


def _trust(server, path) -> None:
    """Sign `path` as the server's own save would (its notebook secret)."""
    subprocess.run([sys.executable, "-m", "jupyter", "trust", str(path)], check=True, capture_output=True,
                   env={**os.environ, "JUPYTER_DATA_DIR": str(server.state / "data")}, timeout=60)


def _reads_as_markdown_only(page) -> None:
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    outputs = panel.locator(".jp-Cell .jp-OutputArea")
    for index, text in READS.items():
        expect(outputs.nth(index)).to_contain_text(text, timeout=30_000)
        if index != 2:  # (a full view's copy; the turn's cell is its transcript)
            expect(outputs.nth(index).locator(".jp-RenderedMarkdown").last).to_be_visible()
    # No widget renderer in any output ("Loading widget…", an error or an icon: it
    # is the one output JupyterLab renders without a MIME type on it), and no
    # text/plain line standing in for a widget.
    for index in READS:
        rendered = outputs.nth(index).locator(".jp-OutputArea-output")
        mimes = [rendered.nth(i).get_attribute("data-mime-type") for i in range(rendered.count())]
        assert "text/markdown" in mimes and None not in mimes and VIEW not in mimes, mimes
    for text in ("Loading widget", "Error displaying widget", "model not found", "live view"):
        expect(panel).not_to_contain_text(text)


def _reopened(nb, server, tmp_path) -> None:
    nb.open(CELLS)
    nb.run_all(5)
    expect(nb.agent_view(1).locator(".mentra-transcript")).to_contain_text(READS[1], timeout=30_000)
    expect(nb.output(2)).to_contain_text(READS[2])
    poll(lambda: READS[1] in (nb.output(1).locator(FALLBACK).text_content() or ""),
         message="the spawn cell's copy to be refreshed")
    nb.page.locator(".jp-NotebookPanel .jp-Notebook").first.click()
    nb.page.keyboard.press("Control+s")
    saved = server.root / nb.name
    poll(lambda: "You said: What lives in a" in json.dumps(json.loads(saved.read_text())["cells"][1]["outputs"]),
         message="the save to land")
    data = json.loads(saved.read_text())
    assert VIEW not in json.dumps([o.get("data", {}) for c in data["cells"] for o in c.get("outputs", [])])
    _shut_down(server, nb.name)

    # A new kernel (the usual reopening).
    reopened = "fresh-kernel-" + nb.name
    (server.root / reopened).write_text(saved.read_text())
    _trust(server, server.root / reopened)
    nb.page.goto(server.url(reopened))
    nb.wait_kernel_idle()
    _reads_as_markdown_only(nb.page)
    _shut_down(server, reopened)

    # No kernel at all.
    no_kernel = "no-kernel-" + nb.name
    data["metadata"]["kernelspec"] = {"name": "no-such-kernel", "display_name": "none", "language": "none"}
    data["metadata"].pop("language_info", None)
    (server.root / no_kernel).write_text(json.dumps(data))
    _trust(server, server.root / no_kernel)
    nb.page.goto(server.url(no_kernel))
    dialog = nb.page.locator(".jp-Dialog")
    expect(dialog).to_be_visible(timeout=60_000)
    dialog.locator(".jp-Dialog-button").get_by_text("No Kernel", exact=True).click()
    _reads_as_markdown_only(nb.page)

    # nbconvert's HTML says the same, and nothing of a widget.
    html = tmp_path / "saved.html"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(saved),
                    "--output", str(html)], check=True, capture_output=True, timeout=120)
    page = html.read_text()
    assert "team of lead" in page and "0 subagents" in page
    assert "You said: What lives in a <strong>tide pool</strong>?" in page
    assert VIEW not in page and "model not found" not in page


def test_a_saved_notebook_reopens_as_its_markdown_in_jupyterlab(notebook, lab_server, tmp_path):
    _reopened(notebook, lab_server, tmp_path)


def test_a_saved_notebook_reopens_as_its_markdown_in_notebook_7(notebook7, notebook7_server, tmp_path):
    _reopened(notebook7, notebook7_server, tmp_path)
