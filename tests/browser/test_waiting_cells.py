"""A waiting cell never deadlocks the agent (issue 29.4), in a real JupyterLab.

A `%%mentra writer --wait` cell whose tool asks for approval shows the Approve
button in its own view while it runs; a click on it reaches the agent while the
cell still waits, and the cell ends with the answer. The next cell, queued
behind it as Run All queues it, runs after it. Before the fix the click queued
behind the waiting cell on the kernel's shell channel and the cell never ended
(this test then ran into its 30 s limit).
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"

MODELS = '''
from mentra_nb import tool
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

published = []

@tool(requires_approval=True)
def publish(title: str) -> str:
    """Publish a report."""
    published.append(title)
    return f"published {title}"

nb.session().runtime.register_tool(publish)
nb.session().runtime.providers.register(ScriptedProvider("waits", [
    tool_use_stream("c1", "publish", '{"title": "Q1"}'),
    text_stream("Published Q1."),
]))
'''


def test_approve_in_the_view_of_a_waiting_cell_lets_the_cell_finish_with_the_answer(notebook):
    nb = notebook.open([SETUP, MODELS, "%mentra spawn writer --model waits:scripted --tools publish",
                        "%%mentra writer --wait\nPublish the Q1 report.",
                        "print('next cell saw', published)"])
    nb.run_all(3)
    nb.run_cell(3, wait=False)
    nb.run_cell(4, wait=False)  # queued behind the waiting cell, as Run All queues it
    view = nb.agent_view(3)
    approval = view.locator(".mentra-approval")
    expect(approval).to_have_count(1, timeout=30_000)
    expect(approval).to_contain_text("publish")
    prompt = nb.cell(3).locator(".jp-InputArea-prompt")
    expect(prompt).to_have_text("[*]:")  # the cell is still waiting
    approval.locator("button.mentra-approve").click()

    nb.wait_cell(3, timeout=30_000)
    expect(nb.output(3).locator(".jp-OutputArea-executeResult")).to_have_text(
        re.compile(r"Published Q1\."))
    nb.wait_cell(4, timeout=30_000)
    expect(nb.output(4)).to_have_text(re.compile(r"next cell saw \['Q1'\]"))
    assert nb.kernel.value("published") == ["Q1"]
