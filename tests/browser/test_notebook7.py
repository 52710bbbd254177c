"""Each widget in Jupyter Notebook 7, not only JupyterLab: the same front-end
modules must render and talk to the kernel in Notebook 7's own page."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.notebook_page import poll
from tests.browser.test_saved_and_run_all import FALLBACK

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb\non_loop = nb.session().host.call"


def test_agent_view_streams_and_takes_a_message_in_notebook_7(notebook7):
    nb = notebook7.open([SETUP, "%mentra spawn writer", "%%mentra writer\nHello from **Notebook 7**"])
    nb.run_all(3)
    view = nb.agent_view(1)
    expect(view.locator(".mentra-badge")).to_have_attribute("data-status", "finished",
                                                            timeout=30_000)
    answer = view.locator('.mentra-transcript .mentra-item[data-role="assistant"]')
    expect(answer).to_have_count(1)
    expect(answer.locator("strong")).to_have_text("Notebook 7")
    copy = nb.output(1).locator(FALLBACK)  # the spawn cell's markdown copy, under its live view
    expect(copy).to_have_count(1)
    expect(copy).to_be_hidden()

    # The message box sends a second turn through the widget's comm.
    view.locator("textarea").fill("And a second line")
    view.locator("button.mentra-send").click()
    expect(answer).to_have_count(2, timeout=30_000)
    history = nb.kernel.value("[m.text for m in nb.session().agent('writer').history]")
    assert history[0] == "Hello from **Notebook 7**" and history[2] == "And a second line"


TEAM_MODELS = '''
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

nb.session().runtime.providers.register(ScriptedProvider("alice_model", [
    tool_use_stream("a1", "team_request",
                    '{"to": "lead", "protocol": "plan_approval", "content": "Read the guide."}'),
    text_stream("Waiting for approval."),
    text_stream("Approved, thanks."),
]))
nb.session().runtime.providers.register(ScriptedProvider("lead_model", []))
'''


def test_team_view_shows_a_request_and_approves_it_in_notebook_7(notebook7):
    nb = notebook7.open([
        SETUP,
        TEAM_MODELS,
        "lead = %mentra spawn lead --model lead_model:scripted --team\n%mentra team lead",
        "%mentra teammate lead alice --role researcher --model alice_model:scripted"
        " --prompt 'Find three facts.'",
    ])
    nb.run_all(4)
    team = nb.output(2).locator(".mentra-team")
    expect(team.locator('li[data-name="alice"] .mentra-model')).to_have_text("researcher")
    # The teammate cell shows the team too: the newest view holds the request's buttons.
    request = nb.output(3).locator(".mentra-team .mentra-request")
    expect(request.locator(".mentra-name")).to_have_text("plan_approval from alice")
    expect(team).to_contain_text("1 request waits for you in the newest view of this team")
    request.locator("button.mentra-approve").click()
    expect(request).to_have_count(0)
    answered = poll(lambda: nb.kernel.value(
        "[(r.protocol, r.status) for r in on_loop(lambda: lead.team_requests(None))]"),
        message="the approved request")
    assert answered == [["plan_approval", "approved"]]


SUBAGENT_MODELS = '''
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

nb.session().runtime.providers.register(ScriptedProvider("lead_model", [
    tool_use_stream("s1", "spawn_agent",
                    '{"task_name": "research", "message": "Do research.", "model": "kid:s"}'),
    tool_use_stream("w1", "wait_agent", '{"timeout_ms": 30000}'),
    text_stream("Done."),
]))
nb.session().runtime.providers.register(ScriptedProvider("kid", [text_stream("Sea stars regrow arms.")]))
'''


def test_subagent_picker_lists_a_child_and_previews_it_in_notebook_7(notebook7):
    nb = notebook7.open([
        SETUP,
        SUBAGENT_MODELS,
        "lead = %mentra spawn lead --model lead_model:scripted --subagents\n%mentra subagents lead",
        "turn = %mentra send lead Write the post.",
    ])
    nb.run_all(4)
    picker = nb.output(2).locator(".mentra-picker")
    child = picker.locator('li[data-path="/root/research"]')
    expect(child.locator(".mentra-badge")).to_have_text("completed")
    child.locator(".mentra-name").click()
    preview = picker.locator(".mentra-preview")
    expect(preview.locator(".mentra-header .mentra-name")).to_have_text("/root/research")
    items = preview.locator(".mentra-transcript .mentra-item")
    expect(items.nth(0)).to_have_text("Do research.")
    expect(items.nth(1)).to_have_text("Sea stars regrow arms.")
    poll(lambda: nb.kernel.value("turn.done()"), message="the lead's run")
