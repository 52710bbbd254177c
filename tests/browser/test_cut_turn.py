"""Issue 30.2: a turn cut by a kernel restart, in JupyterLab 4 and Notebook 7.

The text that had streamed vanished from the old view (only the prompt stayed),
no markdown copy was written, and after a page reload the cell read "Error
displaying widget: model not found"; the HTML export said "turn 3 · running…".
Now the cell turns into the turn as markdown (the prompt, what had streamed, and
that the restart cut it), the page saves it, and the store keeps the turn
interrupted and replayable.
"""

from __future__ import annotations

import json
import subprocess
import sys

from playwright.sync_api import expect

from tests.browser.notebook_page import poll

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"
LONG_PROMPT = " ".join(f"word{i}" for i in range(2000))


def _cut_by_a_restart(nb, server, tmp_path) -> None:
    nb.open([
        SETUP,
        "%mentra spawn writer",
        f"%%mentra writer\n{LONG_PROMPT}",
        "%load_ext mentra_nb\nimport mentra_nb.notebook as nb\n%mentra resume",  # after the restart
    ])
    nb.run_all(3)
    live = nb.agent_view(2).locator(".mentra-live:not(.mentra-thinking)")
    def streamed_so_far() -> str:
        text = live.text_content() or ""
        return text if len(text) > 100 else ""

    streamed = poll(streamed_so_far, message="the reply to start streaming")
    assert streamed.startswith("You said: word0")

    nb.menu("Kernel", "Restart Kernel…")
    nb.page.locator(".jp-Dialog-button").get_by_text("Restart", exact=True).click()
    nb.forget_kernel()
    # The cell is its markdown now: the prompt, what had streamed, and why it ends.
    cut = nb.output(2)
    expect(cut).to_contain_text("writer · turn 1 · cut by a kernel restart", timeout=30_000)
    expect(cut).to_contain_text("word0 word1 word2")
    expect(cut).to_contain_text(streamed)
    expect(cut.locator(".mentra-agent")).to_have_count(0)
    # ... saved at once, so a reload or a reader of the file sees it too.
    saved = server.root / nb.name
    poll(lambda: "cut by a kernel restart" in json.dumps(json.loads(saved.read_text())["cells"][2]["outputs"]),
         message="the cut turn to be saved")

    nb.wait_kernel_idle()
    out = nb.run_cell(3)
    # The store kept the turn: interrupted, its prompt replayable.
    expect(out).to_contain_text("mentra: resumed 'writer', 0 messages, interrupted")
    assert nb.kernel.value("nb.session().agent('writer').resumable_turn.text[:12]") == "word0 word1 "

    # A page reload (the new kernel still runs) shows the same, and no error.
    nb.page.reload()
    nb.wait_kernel_idle()
    expect(nb.output(2)).to_contain_text("cut by a kernel restart", timeout=30_000)
    expect(nb.output(2)).to_contain_text(streamed)
    panel = nb.page.locator("body")
    expect(panel).not_to_contain_text("model not found")
    expect(panel).not_to_contain_text("Error displaying widget")

    # nbconvert's HTML says the same.
    html = tmp_path / "cut.html"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(saved),
                    "--output", str(html)], check=True, capture_output=True, timeout=120)
    page = html.read_text()
    assert "cut by a kernel restart" in page and "running…" not in page
    assert streamed[:60] in page


def test_a_turn_cut_by_a_restart_turns_into_its_markdown_in_jupyterlab(notebook, lab_server, tmp_path):
    _cut_by_a_restart(notebook, lab_server, tmp_path)


def test_a_turn_cut_by_a_restart_turns_into_its_markdown_in_notebook_7(notebook7, notebook7_server, tmp_path):
    _cut_by_a_restart(notebook7, notebook7_server, tmp_path)
