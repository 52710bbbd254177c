"""Issue 36.3: real-time collaboration (jupyter-collaboration) in JupyterLab.

A collaborator who had the notebook open while someone else ran the cells got
the views' markdown ("idle" while the agent streamed, "turn 1 · running…") and
no Stop until a reload: outputs that reach a page through the shared document
are untrusted there (jupyterlab/jupyterlab#11435) and an untrusted output
renders no widget. Saving is the server's in RTC (it autosaves the shared
document), so the page's save hook never ran and a notebook closed without
Ctrl+S reopened with "Error displaying widget: model not found".
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import expect

from tests.browser.notebook_page import NotebookPage, poll, saved_outputs
from tests.browser.test_saved_after_reload import ENDED, HELD_MODEL

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"
SLOW = ("from mentra_nb.providers.test import TestProvider\n"
        "nb.session().runtime.providers.register(TestProvider(name='slow', chunk_delay=0.02))")
VIEW = "application/vnd.jupyter.widget-view+json"
AGENT = "nb.session().agent('writer')"
# Whether every view's scrolling area in the page is full (it grows no more).
VIEWS_FULL = """() => {
  const areas = [...document.querySelectorAll(".mentra-agent .mentra-scroll")];
  return areas.length > 0 && areas.every((area) => area.scrollHeight > area.clientHeight);
}"""


def _second_page(browser, server, name: str):
    """The notebook open in another browser (another collaborator), with its console."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.set_default_timeout(30_000)
    page = context.new_page()
    return context, NotebookPage(page, server, name).open_existing()


def test_a_collaborator_sees_the_stream_live_and_can_stop_it(notebook_rtc, browser, rtc_server):
    prompt = " ".join(f"word{i}" for i in range(3000))  # a reply of a minute
    runner = notebook_rtc.open([f"{SETUP}\n{SLOW}", "%mentra spawn writer --model slow:m",
                                f"%%mentra writer\n{prompt}"])
    context, other = _second_page(browser, rtc_server, runner.name)  # open before anything runs
    try:
        runner.run_all(3)
        turn = other.agent_view(2)
        expect(turn.locator(".mentra-badge")).to_have_attribute("data-status", "streaming")
        live = turn.locator(".mentra-live:not(.mentra-thinking)")
        seen = len(poll(lambda: live.text_content(), message="the reply on the collaborator's page"))
        poll(lambda: len(live.text_content() or "") > seen, message="the collaborator's view to stream")
        # The spawn cell's view is live too (its markdown copy hidden under it).
        expect(other.agent_view(1).locator(".mentra-badge")).to_have_attribute("data-status", "streaming")

        # Stop is pressed once the views above it stopped growing (each scrolls in an
        # area of bounded height, full by then): a button that moves while the text
        # grows can slip from under the pointer between Playwright's aim and its click.
        poll(lambda: other.page.evaluate(VIEWS_FULL), message="the views' areas to fill")
        turn.locator(".mentra-stop").click()
        # The view took the click ("stopping…" at once, before the kernel hears of it).
        expect(turn.locator('.mentra-badge[data-status="streaming"]')).to_have_count(0)
        poll(lambda: runner.kernel.value(f"{AGENT}.status.name") == "finished", message="the run to stop")
        assert runner.kernel.value(f"{AGENT}.history[-1].truncated") is True
        kept = runner.kernel.value(f"{AGENT}.history[-1].text")
        assert len(kept) < len(prompt)
        # Stop keeps the reply as far as the page had shown it, which may end just
        # after a space; the saved markdown drops that space, so its end is looked for.
        end = kept.rstrip()[-40:]
        # Both pages show the turn as it ended, and so does the file the server saved:
        # once (two pages that replaced the output at once would leave two).
        for page in (runner, other):
            expect(page.output(2)).to_contain_text(end)
        saved = rtc_server.root / runner.name
        poll(lambda: end in json.dumps(saved_outputs(saved, 2)), message="the ended turn to be saved")
        turn_outputs = saved_outputs(saved, 2)
        assert [o["output_type"] for o in turn_outputs] == ["display_data", "execute_result"], turn_outputs
        assert all(VIEW not in o["data"] for o in turn_outputs)
    finally:
        context.close()


def test_a_notebook_autosaved_by_the_server_reopens_as_its_markdown(notebook_rtc, rtc_server):
    nb = notebook_rtc.open([SETUP, "%mentra spawn writer",
                            "%%mentra writer\nWhat lives in a **tide pool**?"])
    nb.run_all(3)
    said = "You said: What lives in a tide pool?"
    said_markdown = "You said: What lives in a **tide pool**?"
    expect(nb.agent_view(1).locator(".mentra-transcript")).to_contain_text(said)
    saved = rtc_server.root / nb.name
    # No Ctrl+S: the server saves the shared document on its own.
    poll(lambda: all(said_markdown in json.dumps(saved_outputs(saved, index)) for index in (1, 2)),
         message="the server's autosave of the ended turn and the spawn cell's copy")
    text = saved.read_text()
    data = [o.get("data", {}) for c in json.loads(text)["cells"] for o in c.get("outputs", [])]
    assert VIEW not in json.dumps(data), "a widget output of ours reached the file"
    for index in (1, 2):
        markdown = "".join("".join(o["data"]["text/markdown"]) for o in saved_outputs(saved, index)
                           if "text/markdown" in o.get("data", {}))
        assert said_markdown in markdown, markdown

    # Reopened with a new kernel (another name: the server reads it from the file).
    reopened = "reopened-" + nb.name
    (rtc_server.root / reopened).write_text(text)
    nb.page.goto(rtc_server.url(reopened))
    nb.wait_kernel_idle()
    panel = nb.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    outputs = panel.locator(".jp-Cell .jp-OutputArea")
    for index in (1, 2):
        expect(outputs.nth(index)).to_contain_text(said)
    for text_shown in ("Loading widget", "Error displaying widget", "model not found"):
        expect(panel).not_to_contain_text(text_shown)
    for session in rtc_server.api("GET", "sessions"):
        if session["path"] == reopened:
            rtc_server.api("DELETE", f"sessions/{session['id']}")


def test_a_turn_that_ends_after_its_runner_reloaded_is_autosaved_as_it_ended(notebook_rtc, rtc_server):
    """The kernel's display updates reach only the page that ran the cell, and only
    until it reloads; the server's autosave runs no page's save hook. A page writes
    the view's new copy into the shared document instead."""
    nb = notebook_rtc
    tag = nb.name.removesuffix(".ipynb")
    nb.open([SETUP, HELD_MODEL.format(name=tag), "%mentra spawn writer --model held:m --tools wait_for_release",
             "%%mentra writer\nHold on"])
    nb.run_all(4)
    expect(nb.agent_view(3).locator(".mentra-badge")).to_have_attribute("data-status", "executing_tool")
    nb.page.reload()
    nb.wait_kernel_idle()
    turn = nb.agent_view(3)
    expect(turn.locator(".mentra-badge")).to_have_attribute("data-status", "executing_tool", timeout=30_000)
    (rtc_server.root / f"release-{tag}").write_text("")
    expect(turn.locator(".mentra-transcript")).to_contain_text(ENDED, timeout=30_000)

    saved = rtc_server.root / nb.name
    poll(lambda: ENDED in json.dumps(saved_outputs(saved, 3)) and ENDED in json.dumps(saved_outputs(saved, 2)),
         message="the server's autosave of the ended turn and the spawn cell's copy")
    turn_outputs = saved_outputs(saved, 3)
    assert [o["output_type"] for o in turn_outputs] == ["display_data", "execute_result"], turn_outputs
    assert "running…" not in json.dumps(turn_outputs)
    assert all(VIEW not in o["data"] for o in turn_outputs)
    # The page shows the turn as it ended, once.
    expect(nb.output(3).locator(".jp-OutputArea-output")).to_have_count(2)


# Every dialog the page opens, kept as it opens (one closed later still counts);
# DIALOG_TITLES reads their titles.
RECORD_DIALOGS = """() => {
  window.mentraDialogs = [];
  new MutationObserver(() => {
    for (const dialog of document.querySelectorAll(".jp-Dialog")) {
      if (!window.mentraDialogs.includes(dialog)) window.mentraDialogs.push(dialog);
    }
  }).observe(document.body, {childList: true, subtree: true});
}"""
DIALOG_TITLES = "() => window.mentraDialogs.map((d) => d.querySelector('.jp-Dialog-header')?.textContent ?? '')"


def test_the_first_spawn_after_typing_asks_nothing_about_a_changed_file(notebook_rtc, rtc_server):
    """The first view of a notebook's agents writes their id into its metadata
    (js/saved_state.js keepNotebookIdentity). It saved the notebook from the page
    too, and a page's save first compares the file on disk with the version the
    page last heard of: when the server's autosave of what the user had just
    typed had reached the disk but not yet the page, JupyterLab asked "File
    Changed" (overwrite or revert?). Here the page hears of the server's saves
    late (the request in which it reads the saved file's new version is held), as
    on a busy machine, so the race is lost every time."""
    nb = notebook_rtc.open([SETUP, "%mentra spawn writer", ""])
    nb.page.evaluate(RECORD_DIALOGS)
    nb.run_cell(0)
    saved = rtc_server.root / nb.name
    held: list = []

    def news_of_a_save(url: str) -> bool:
        # The page's request for the file's version after the server saved it
        # (content=0, hash=0); its check before a save of its own asks with hash=1.
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        return parts.path.endswith(f"/api/contents/{nb.name}") and query.get("content") == ["0"] \
            and query.get("hash") == ["0"] and "type" not in query

    def hold(route) -> None:
        held.append(route)

    nb.page.route(news_of_a_save, hold)
    try:
        nb.cell(2).locator(".jp-InputArea-editor").click()
        nb.page.keyboard.type("note = 'typed by hand'")
        poll(lambda: "typed by hand" in saved.read_text(), message="the server's autosave of the typing")
        # (a call into the page lets Playwright hand the request to the route)
        poll(lambda: nb.page.evaluate("true") and held, message="the page to ask for the saved file's version")
        nb.run_cell(1)
        expect(nb.agent_view(1).locator(".mentra-badge")).to_have_attribute("data-status", "idle")
        # The server saved both: the typing, and the agents' id the page wrote.
        poll(lambda: _saved_id_and_typing(saved), message="the server's autosave of the notebook's agent id")
    finally:
        for route in held:
            route.continue_()
        nb.page.unroute(news_of_a_save)
    assert nb.page.evaluate(DIALOG_TITLES) == []


def _saved_id_and_typing(path) -> bool:
    """Whether the saved notebook holds its agents' id and the typed cell (False
    while the server is still writing it)."""
    try:
        notebook = json.loads(path.read_text())
    except ValueError:
        return False
    typed = "typed by hand" in "".join(notebook["cells"][2]["source"])
    return typed and bool((notebook["metadata"].get("mentra") or {}).get("id"))
