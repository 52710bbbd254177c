"""Issue 30.1: a notebook's agents belong to the notebook, not its file name.

As a new user met it: a notebook made as `Untitled` and renamed before anything
ran kept its agents under `Untitled`, so after a restart `%mentra resume` in the
renamed notebook found nothing, and a later new `Untitled` attached to them.
Here the notebook is renamed the way the file browser does it (the page's own
contents manager, so the open document and its kernel session follow), in
JupyterLab 4 and Notebook 7.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.browser.lab_server import LabServer
from tests.browser.notebook_page import NotebookPage, poll

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"
RENAME = "([from, to]) => window.jupyterapp.serviceManager.contents.rename(from, to)"


@pytest.fixture
def sessions() -> Iterator[list[tuple[LabServer, str]]]:
    """(server, notebook) pairs whose kernels are shut down after the test, pass or fail."""
    opened: list[tuple[LabServer, str]] = []
    yield opened
    for server, name in opened:
        for session in server.api("GET", "sessions"):
            if session["path"] == name:
                server.api("DELETE", f"sessions/{session['id']}")


def _identity(server: LabServer, name: str) -> dict[str, str] | None:
    return json.loads((server.root / name).read_text())["metadata"].get("mentra")


def _rename_work_restart_resume(page, server: LabServer, sessions, tag: str) -> tuple[str, str]:
    """Open `Untitled-TAG`, rename it `tour-TAG` before running anything, work,
    restart the kernel, `%mentra resume`: the agent and its conversation are back."""
    old, new = f"Untitled-{tag}.ipynb", f"tour-{tag}.ipynb"
    sessions.extend([(server, old), (server, new)])
    nb = NotebookPage(page, server, old).open([
        SETUP,
        "%mentra spawn writer",
        "%mentra send writer --wait Remember the tide pool",
        "%load_ext mentra_nb\n%mentra resume",  # after the restart
    ])
    page.evaluate(RENAME, [old, new])
    nb.name = new
    poll(lambda: any(s["path"] == new for s in server.api("GET", "sessions")),
         message="the kernel's session to follow the rename")
    nb.run_all(3)
    expect(nb.output(2)).to_contain_text("You said: Remember the tide pool")
    # The page wrote where the agents are into the notebook, and saved it.
    poll(lambda: (_identity(server, new) or {}).get("id"), message="the notebook to keep its agents' id")

    nb.menu("Kernel", "Restart Kernel…")
    page.locator(".jp-Dialog-button").get_by_text("Restart", exact=True).click()
    nb.forget_kernel()
    expect(nb.agent_view(1)).to_have_attribute("data-connected", "false")
    nb.wait_kernel_idle()
    out = nb.run_cell(3)
    expect(out).to_contain_text("mentra: resumed 'writer', 2 messages")
    expect(nb.agent_view(3).locator(".mentra-transcript")).to_contain_text("You said: Remember the tide pool")
    return old, new


def _a_new_notebook_of_the_old_name_has_its_own_agents(page, server: LabServer, old: str, new: str) -> NotebookPage:
    stem = old.removesuffix(".ipynb")
    nb = NotebookPage(page, server, old).open([SETUP, "%mentra resume", "%mentra spawn writer",
                                               f"%mentra adopt .mentra/{stem}.sqlite {stem}"])
    nb.run_all(2)
    out = nb.output(1)
    expect(out).to_contain_text("mentra: nothing to resume")
    # ... and it says where agents are kept nearby, whose they are, and how to adopt them.
    expect(out).to_contain_text(f"runtime id '{stem}': writer (kept by {new})")
    expect(out).to_contain_text(f"%mentra adopt .mentra/{stem}.sqlite {stem}")
    nb.run_cell(2)
    assert nb.kernel.value("len(nb.session().agent('writer').history)") == 0
    assert nb.kernel.value("nb.session().location.runtime_id") == f"{stem}-2"
    return nb


def test_a_renamed_notebook_keeps_its_agents_and_a_new_one_of_its_old_name_gets_its_own(
        page, lab_server, sessions):
    old, new = _rename_work_restart_resume(page, lab_server, sessions, "lab")
    nb = _a_new_notebook_of_the_old_name_has_its_own_agents(page, lab_server, old, new)
    # The one command the hint names makes them this notebook's (once the renamed
    # notebook's kernel, which drives them, is shut down).
    for session in lab_server.api("GET", "sessions"):
        if session["path"] == new:
            lab_server.api("DELETE", f"sessions/{session['id']}")
    out = nb.run_cell(3)
    expect(out).to_contain_text("mentra: resumed 'writer', 2 messages")
    stem = old.removesuffix(".ipynb")
    poll(lambda: (_identity(lab_server, old) or {}).get("id") == stem, message="the adopted id to be kept")


def test_a_renamed_notebook_keeps_its_agents_in_notebook_7(page, notebook7_server, sessions):
    old, new = _rename_work_restart_resume(page, notebook7_server, sessions, "nb7")
    _a_new_notebook_of_the_old_name_has_its_own_agents(page, notebook7_server, old, new)
