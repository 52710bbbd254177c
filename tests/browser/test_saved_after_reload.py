"""Issue 30.3: saved copies are current at save time, also after a page reload.

The kernel keeps a view's saved copy current with display updates, which reach
only the outputs the page received itself; after a reload (the kernel still
running) the outputs read from the file carry no display id, so a turn that
ended after the reload was saved as "running…" and the spawn cell's copy as
"idle" with no messages. The page now writes each view's current copy into the
notebook when it saves it. In JupyterLab 4 and Notebook 7.
"""

from __future__ import annotations

import json

from playwright.sync_api import expect

from tests.browser.notebook_page import poll

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"
# A turn that waits in a tool until the test releases it (no timing margins).
HELD_MODEL = '''
import pathlib, time
from mentra_nb import tool
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

@tool(read_only=True)
def wait_for_release() -> str:
    """Wait until the test releases the turn."""
    while not pathlib.Path("release-{name}").exists():
        time.sleep(0.05)
    return "released"

nb.session().register_tool(wait_for_release)
nb.session().runtime.providers.register(ScriptedProvider("held", [
    tool_use_stream("t1", "wait_for_release", "{{}}"),
    text_stream("The turn ended after the reload."),
]))
'''
ENDED = "The turn ended after the reload."


def _outputs(server, name: str, index: int) -> str:
    return json.dumps(json.loads((server.root / name).read_text())["cells"][index]["outputs"])


def _save(nb) -> None:
    nb.page.locator(".jp-NotebookPanel .jp-Notebook").first.click()  # the notebook has the focus
    nb.page.keyboard.press("Control+s")


def _saved_after_a_reload(nb, server) -> None:
    tag = nb.name.removesuffix(".ipynb")
    nb.open([SETUP, HELD_MODEL.format(name=tag), "%mentra spawn writer --model held:m --tools wait_for_release",
             "%%mentra writer\nHold on"])
    nb.run_all(4)
    expect(nb.agent_view(3).locator(".mentra-badge")).to_have_attribute("data-status", "executing_tool")
    _save(nb)
    poll(lambda: "widget-view" in _outputs(server, nb.name, 3), message="the first save to land")

    nb.page.reload()
    nb.wait_kernel_idle()
    turn = nb.agent_view(3)
    expect(turn.locator(".mentra-badge")).to_have_attribute("data-status", "executing_tool", timeout=30_000)
    (server.root / f"release-{tag}").write_text("")
    expect(turn.locator(".mentra-transcript")).to_contain_text(ENDED, timeout=30_000)
    expect(nb.agent_view(2).locator(".mentra-transcript")).to_contain_text(ENDED)

    _save(nb)
    # The ended turn is saved as its transcript, the spawn cell's copy as it is now.
    poll(lambda: ENDED in _outputs(server, nb.name, 3), message="the ended turn to be saved")
    turn_outputs = json.loads((server.root / nb.name).read_text())["cells"][3]["outputs"]
    assert all("application/vnd.jupyter.widget-view+json" not in o.get("data", {}) for o in turn_outputs)
    assert "running…" not in json.dumps(turn_outputs)
    spawn = json.loads(_outputs(server, nb.name, 2))
    [copy] = [o for o in spawn if "mentra" in o.get("metadata", {})]  # the copy that stands for the view
    markdown = "".join(copy["data"]["text/markdown"])
    assert ENDED in markdown and "finished" in markdown


def test_a_page_reloaded_while_the_kernel_runs_saves_current_copies_in_jupyterlab(notebook, lab_server):
    _saved_after_a_reload(notebook, lab_server)


def test_a_page_reloaded_while_the_kernel_runs_saves_current_copies_in_notebook_7(notebook7, notebook7_server):
    _saved_after_a_reload(notebook7, notebook7_server)
