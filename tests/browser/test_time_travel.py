"""Time travel in a real JupyterLab: "Fork from here" and "Edit" in the AgentView
reach the kernel, and a fork's view names its parent."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.notebook_page import poll

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"
TWO_TURNS = ("%mentra spawn writer\n"
             "%mentra send writer --wait first question\n"
             "%mentra send writer --wait second question\n"
             "nb.session().agent('writer')")


def test_fork_from_here_makes_a_fork_in_the_kernel(notebook):
    nb = notebook.open([SETUP, TWO_TURNS, "nb.session().agent('first-two')"])
    nb.run_all(2)
    view = nb.agent_view(1)
    expect(view.locator(".mentra-badge")).to_have_attribute("data-status", "finished")
    rows = view.locator(".mentra-message-actions")
    expect(rows).to_have_count(4)
    rows.nth(1).locator("button.mentra-fork").click()  # under "You said: first question"
    name = view.locator(".mentra-fork-name")
    expect(name).to_have_value("writer-fork-2")
    name.fill("first-two")
    view.locator("button.mentra-fork-confirm").click()
    expect(view.locator(".mentra-time-travel-notice")).to_contain_text("forked as 'first-two'")
    history = "[m.text for m in nb.session().agent('first-two').history]"
    assert nb.kernel.value(history) == ["first question", "You said: first question"]
    assert nb.kernel.value("len(nb.session().agent('writer').history)") == 4

    nb.run_cell(2)  # the fork's own view
    fork = nb.agent_view(2)
    expect(fork.locator(".mentra-fork-origin")).to_have_text("fork of writer at message 2")
    expect(fork.locator(".mentra-transcript .mentra-item")).to_have_count(2)


def test_show_earlier_messages_loads_the_page_before_whose_fork_buttons_work(notebook):
    """Issue 32: a view is greeted with its transcript's last page (here of 2 messages)."""
    paged = SETUP + "\nimport mentra_nb.notebook.agent_view as agent_view\nagent_view.TRANSCRIPT_PAGE = 2"
    nb = notebook.open([paged, TWO_TURNS])
    nb.run_all(2)
    view = nb.agent_view(1)
    expect(view.locator(".mentra-badge")).to_have_attribute("data-status", "finished")
    items = view.locator(".mentra-transcript .mentra-item")
    expect(items).to_have_count(2)
    expect(items.first).to_contain_text("second question")
    more = view.locator("button.mentra-older")
    expect(more).to_have_text("Show 2 earlier messages")
    more.click()
    expect(items).to_have_count(4)
    expect(items.first).to_contain_text("first question")
    expect(more).to_be_hidden()
    rows = view.locator(".mentra-message-actions")
    expect(rows).to_have_count(4)
    rows.nth(1).locator("button.mentra-fork").click()  # under "You said: first question", just loaded
    view.locator(".mentra-fork-name").fill("first-two")
    view.locator("button.mentra-fork-confirm").click()
    expect(view.locator(".mentra-time-travel-notice")).to_contain_text("forked as 'first-two'")
    history = "[m.text for m in nb.session().agent('first-two').history]"
    assert nb.kernel.value(history) == ["first question", "You said: first question"]


def test_edit_sends_the_new_words_in_place_and_keeps_the_old_branch(notebook):
    nb = notebook.open([SETUP, TWO_TURNS])
    nb.run_all(2)
    view = nb.agent_view(1)
    expect(view.locator(".mentra-badge")).to_have_attribute("data-status", "finished")
    edits = view.locator("button.mentra-edit")
    expect(edits).to_have_count(2)  # the user's two messages
    edits.nth(1).click()
    box = view.locator(".mentra-edit-text")
    expect(box).to_have_value("second question")
    box.fill("second question, rephrased")
    view.locator("button.mentra-edit-confirm").click()

    items = view.locator(".mentra-transcript .mentra-item")
    expect(items.nth(3)).to_have_text("You said: second question, rephrased", timeout=30_000)
    expect(items).to_have_count(4)
    expect(view.locator(".mentra-badge")).to_have_attribute("data-status", "finished")
    agent = "nb.session().agent('writer')"
    poll(lambda: nb.kernel.value(f"[m.text for m in {agent}.history]")[2:] == [
        "second question, rephrased", "You said: second question, rephrased"],
        message="the edit did not reach the kernel")
    branches = nb.kernel.value(f"[(b.fork_index, b.length, b.is_head) for b in {agent}.branches()]")
    assert branches == [[0, 4, False], [2, 4, True]]
