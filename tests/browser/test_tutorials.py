"""The tutorials run top to bottom in JupyterLab itself, where the kernel knows
its notebook's path (so each finds its own state file), and their widgets render."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

ERRORS = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]'


@pytest.mark.parametrize("name", ["01-quickstart.ipynb", "05-restart-recovery.ipynb"])
def test_a_tutorial_runs_in_jupyterlab_without_errors(notebook, name):
    notebook.name = name
    nb = notebook.open_existing()
    nb.run_all_from_menu()
    panel = nb.page.locator(".jp-NotebookPanel")
    expect(panel.locator(ERRORS)).to_have_count(0)
    views = panel.locator(".mentra-agent")  # full views (spawn, resume) stay live widgets
    expect(views.first).to_be_visible()
    if name == "01-quickstart.ipynb":
        # Its two %%mentra cells each ended as their turn's transcript (issue 15.7).
        # (not the spawn cell's markdown copy, hidden under its live view)
        turns = panel.locator(".jp-OutputArea .jp-RenderedMarkdown:visible").filter(has_text="You said:")
        expect(turns).to_have_count(2, timeout=30_000)
    # Every live view settled: nothing is left running or waiting.
    for badge in views.locator(".mentra-header .mentra-badge").all():
        expect(badge).to_have_attribute("data-status", "finished", timeout=30_000)
    location = nb.kernel.value("[str(nb.session().location.path.name), nb.session().location.source]")
    assert location == [name.replace(".ipynb", ".sqlite"), "beside the notebook (from JPY_SESSION_NAME)"]
