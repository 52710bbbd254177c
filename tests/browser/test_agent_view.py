"""The AgentView in a real JupyterLab: streaming, tool calls, the message box, a kernel restart.

Each test types nothing into code cells: it writes a notebook, opens it and
runs its cells with Shift+Enter, then checks both what the page shows and what
the kernel holds (through a second client on the same kernel).
"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.notebook_page import poll

# Records every length the live-streaming text takes, from the moment it is installed.
WATCH_LIVE_TEXT = """() => {
  window.__liveLengths = [];
  const record = () => {
    const live = document.querySelector('.mentra-agent .mentra-live:not(.mentra-thinking)');
    if (live) window.__liveLengths.push(live.textContent.length);
  };
  window.__liveObserver = new MutationObserver(record);
  window.__liveObserver.observe(document.body, {subtree: true, childList: true, characterData: true});
}"""

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"


def test_a_reply_streams_into_the_view_then_renders_as_markdown_and_finishes(notebook):
    words = " ".join(f"word{i}" for i in range(150))
    prompt = f"**Bold** claim, `code` and {words}"
    nb = notebook.open([SETUP, "%mentra spawn writer", f"%%mentra writer\n{prompt}"])
    nb.run_cell(0)
    nb.run_cell(1)
    view = nb.agent_view(1)
    expect(view.locator(".mentra-name")).to_have_text("writer")
    expect(view.locator(".mentra-badge")).to_have_text("idle")

    nb.page.evaluate(WATCH_LIVE_TEXT)
    nb.run_cell(2)  # returns at once with a Turn; the agent streams on
    expect(nb.output(2)).to_contain_text("Turn(writer, run 1)")
    # The cell shows its turn live; when the turn ends that output becomes the turn's
    # transcript as markdown (issue 15.7: what a saved notebook keeps).
    turn = nb.output(2)
    expect(turn.locator(".jp-RenderedMarkdown")).to_contain_text("You said: **Bold**"[:9], timeout=30_000)
    expect(turn).to_contain_text("word149")
    expect(turn.locator(".mentra-agent")).to_have_count(0)
    view = nb.agent_view(1)  # the spawn cell's view of the whole conversation
    badge = view.locator(".mentra-badge")
    expect(badge).to_have_attribute("data-status", "finished", timeout=30_000)
    expect(badge).to_have_text("finished")

    reply = f"You said: {prompt}"
    lengths = nb.page.evaluate("window.__liveLengths")
    partial = sorted({n for n in lengths if 0 < n < len(reply)})
    assert len(partial) >= 3, f"saw only these live lengths: {sorted(set(lengths))}"
    assert max(lengths) <= len(reply)

    answer = view.locator('.mentra-transcript .mentra-item[data-role="assistant"]')
    expect(answer).to_have_count(1)
    expect(answer.locator("strong")).to_have_text("Bold")
    expect(answer.locator("code")).to_have_text("code")
    expect(answer).to_contain_text("word149")
    expect(view.locator(".mentra-live:not(.mentra-thinking)")).to_be_empty()
    expect(view.locator(".mentra-run")).to_have_text("run 1")

    agent = "nb.session().agent('writer')"
    assert nb.kernel.value(f"{agent}.status.name") == "finished"
    assert nb.kernel.value(f"[m.text for m in {agent}.history]") == [prompt, reply]


def test_tool_calls_are_collapsible_and_show_their_input_and_result(notebook):
    define_tool = '''from mentra_nb import tool

@tool(read_only=True)
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())

nb.session().runtime.register_tool(word_count)'''
    nb = notebook.open([SETUP, define_tool, "%mentra spawn counter --tools word_count",
                        "%%mentra counter --wait\nHow many words?"])
    nb.run_all(4)
    view = nb.agent_view(2)  # the spawn cell's (the --wait cell's turn is markdown by now)
    expect(view.locator(".mentra-badge")).to_have_attribute("data-status", "finished")

    call = view.locator("details.mentra-tool")
    expect(call).to_have_count(1)
    summary = call.locator("summary")
    expect(summary).to_have_text("tool call: word_count")
    tool_input, tool_result = call.locator("pre").nth(0), call.locator("pre").nth(1)
    # Folded: only the summary shows until it is clicked.
    expect(tool_input).to_be_hidden()
    summary.click()
    expect(call).to_have_attribute("open", "")
    expect(tool_input).to_be_visible()
    expect(tool_input).to_contain_text('"text": "a"')  # the test model's argument from the schema
    expect(tool_result).to_be_visible()
    expect(tool_result).to_have_text("1")
    summary.click()
    expect(tool_input).to_be_hidden()

    answer = view.locator('.mentra-item[data-role="assistant"][data-kind="text"]')
    expect(answer).to_have_text("Tool results: word_count returned 1")
    history = nb.kernel.value(
        "[[b.model_dump(include={'type', 'name', 'content'}) for b in m.content]"
        " for m in nb.session().agent('counter').history]")
    assert history[1] == [{"type": "tool_use", "name": "word_count"}]
    assert history[2] == [{"type": "tool_result", "content": "1"}]


def test_the_message_box_sends_a_new_turn(notebook):
    nb = notebook.open([SETUP, "%mentra spawn writer"])
    nb.run_all(2)
    view = nb.agent_view(1)
    box = view.locator(".mentra-controls textarea")
    box.fill("sent from the widget")
    view.locator("button.mentra-send").click()

    expect(view.locator(".mentra-badge")).to_have_attribute("data-status", "finished")
    items = view.locator(".mentra-transcript .mentra-item")
    expect(items).to_have_count(2)
    expect(items.nth(0)).to_have_text("sent from the widget")
    expect(items.nth(1)).to_have_text("You said: sent from the widget")
    expect(box).to_have_value("")
    assert nb.kernel.value("[m.text for m in nb.session().agent('writer').history]") == [
        "sent from the widget", "You said: sent from the widget"]


def test_after_a_kernel_restart_resume_shows_the_old_history_and_the_cut_turn(notebook):
    long_prompt = " ".join(f"word{i}" for i in range(2000))
    nb = notebook.open([
        SETUP,
        "%mentra spawn writer",
        "%mentra send writer --wait warm up",
        f"%%mentra writer\n{long_prompt}",
        # Run after the restart:
        "%load_ext mentra_nb\nimport mentra_nb.notebook as nb",
        "%mentra resume",
    ])
    nb.run_all(4)
    view = nb.agent_view(3)
    live = view.locator(".mentra-live:not(.mentra-thinking)")
    poll(lambda: len(live.text_content() or "") > 100, message="the reply to start streaming")
    expect(view.locator(".mentra-badge")).to_have_attribute("data-status", "streaming")

    # Kernel → Restart Kernel…, and confirm, as a person would.
    nb.menu("Kernel", "Restart Kernel…")
    nb.page.locator(".jp-Dialog-button").get_by_text("Restart", exact=True).click()
    nb.forget_kernel()
    nb.wait_kernel_idle()
    # The old full view can no longer act: it says so and its controls are off.
    old_view = nb.agent_view(1)
    expect(old_view).to_have_attribute("data-connected", "false")
    expect(old_view.locator(".mentra-interrupt")).to_be_disabled()
    # ... once, however often Jupyter reports the dead kernel (issue 15: it was appended twice).
    expect(old_view.get_by_text("its kernel stopped")).to_have_count(1)
    # The cut turn's cell is now its markdown (issue 30.2: tests/browser/test_cut_turn.py).
    expect(nb.output(3)).to_contain_text("cut by a kernel restart")

    nb.run_cell(4)
    out = nb.run_cell(5)
    expect(out).to_contain_text("mentra: resumed 'writer', 2 messages, interrupted")
    view = nb.agent_view(5)
    badge = view.locator(".mentra-badge")
    expect(badge).to_have_attribute("data-status", "interrupted")
    expect(badge).to_have_text("interrupted")
    items = view.locator(".mentra-transcript .mentra-item")
    expect(items).to_have_count(2)
    expect(items.nth(0)).to_have_text("warm up")
    expect(items.nth(1)).to_have_text("You said: warm up")
    expect(view.locator(".mentra-live:not(.mentra-thinking)")).to_be_empty()
    expect(view.locator(".mentra-resumable")).to_contain_text("This turn was cut and rolled back")
    expect(view.locator(".mentra-resume")).to_have_text("Replay it")

    agent = "nb.session().agent('writer')"
    assert nb.kernel.value(f"{agent}.status.name") == "interrupted"
    assert nb.kernel.value(f"{agent}.resumable_turn.text[:12]") == "word0 word1 "


SLOW = ("from mentra_nb.providers.test import TestProvider\n"
        "nb.session().runtime.providers.register(TestProvider(name='slow', chunk_delay=0.05))")
# A cell tall enough that a few of them push the agent's cell out of the viewport.
FILLER = "\n".join(f"# filler line {i}" for i in range(60))
FILLER_CELLS = [FILLER] * 12
FULL_VIEW = '.mentra-agent[data-mentra-scope="full"]'


def _windowing(lab_server, mode: str | None) -> None:
    """Set JupyterLab's notebook windowing mode (None: back to its default)."""
    import json
    import urllib.request

    raw = json.dumps({} if mode is None else {"windowingMode": mode})
    request = urllib.request.Request(
        f"{lab_server.base_url}/lab/api/settings/@jupyterlab/notebook-extension:tracker",
        data=json.dumps({"raw": raw}).encode(), method="PUT",
        headers={"Authorization": f"token {lab_server.token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10):
        pass


def test_in_a_windowed_notebook_a_view_scrolled_away_and_back_keeps_streaming(notebook, lab_server):
    """JupyterLab's `windowingMode: "full"` takes cells far off screen out of the
    page and puts them back as they scroll in: the spawn cell's view must come
    back with its transcript, its draft and the stream still running."""
    _windowing(lab_server, "full")
    try:
        words = " ".join(f"w{i}" for i in range(400))
        nb = notebook.open([f"{SETUP}\n{SLOW}", "%mentra spawn writer --model slow:default",
                            "%mentra send writer --wait first question",
                            *FILLER_CELLS])
        for index in range(3):
            nb.run_cell(index)
        view = nb.page.locator(FULL_VIEW)
        expect(view.locator(".mentra-transcript")).to_contain_text("You said: first question")
        view.locator("textarea").fill("a draft kept while away")
        # Make the last cell the active one (JupyterLab never takes the active cell, or
        # the one holding the focus, out of the page) and scroll to it (the list
        # measures cells as they come: again until it shows).
        nb.page.evaluate(f"""() => {{ document.activeElement?.blur();
            window.jupyterapp.shell.currentWidget.content.activeCellIndex = {len(FILLER_CELLS) + 2}; }}""")
        scroller = nb.page.locator(".jp-NotebookPanel .jp-WindowedPanel-outer")
        last = nb.page.locator(f'.jp-NotebookPanel .jp-Cell[data-windowed-list-index="{len(FILLER_CELLS) + 2}"]')
        poll(lambda: scroller.evaluate("el => (el.scrollTop = el.scrollHeight, 1)") and last.is_visible(),
             message="the last cell to scroll into view")
        expect(nb.page.locator(FULL_VIEW)).to_be_hidden(timeout=30_000)  # out of the page's layout
        # A long reply starts while the view is away (sent from Python, as a cell would).
        nb.kernel.run(f"_turn = nb.session().send(nb.session().agent('writer'), {' '.join([words, 'the-end'])!r})")
        poll(lambda: nb.kernel.value("len(nb.session().agent('writer').snapshot.current_text)") > 200,
             message="the reply to stream while its view is away")
        assert not nb.page.locator(FULL_VIEW).is_visible(), "the spawn cell was back in the page too soon"

        # Back to the top while the reply still streams.
        scroller.evaluate("el => el.scrollTop = 0")
        view = nb.page.locator(FULL_VIEW)
        expect(view).to_be_visible(timeout=30_000)
        assert nb.kernel.value("nb.session().agent('writer').is_running"), "the reply ended too soon"
        live = view.locator(".mentra-live:not(.mentra-thinking)")
        seen = len(live.text_content() or "")
        poll(lambda: len(live.text_content() or "") > seen or "the-end" in (view.text_content() or ""),
             message="the view to go on streaming after it came back")
        expect(view.locator(".mentra-transcript")).to_contain_text("the-end", timeout=60_000)
        expect(view.locator(".mentra-transcript")).to_contain_text("You said: first question")
        expect(view.locator("textarea")).to_have_value("a draft kept while away")
    finally:
        _windowing(lab_server, None)


# Reads the turn view's live text and clicks its Stop in one step, as a reader does:
# what the page showed at the click.
STOP_WHILE_READING = """(view) => {
  const shown = view.querySelector('.mentra-live:not(.mentra-thinking)').textContent;
  view.querySelector('.mentra-stop').click();
  return shown;
}"""


def test_stop_keeps_the_reply_as_far_as_the_page_showed_it(notebook):
    """Issue 32: the kernel sent live text in batches 1, 2, then 4 s apart; clicking
    Stop while the page showed paragraph 7 kept a reply that ran to paragraph 15.
    Now the reply kept is what was on screen, give or take 250 ms of the stream."""
    chunk_delay = 0.02  # one word of the echoed prompt (≤ 10 characters) every 20 ms
    prompt = " ".join(f"word{i}" for i in range(3000))
    nb = notebook.open([
        SETUP + "\nfrom mentra_nb.providers.test import TestProvider\n"
        f"nb.session().runtime.providers.register(TestProvider(name='slow', chunk_delay={chunk_delay}))",
        "%mentra spawn writer --model slow:m",
        f"%%mentra writer\n{prompt}",
    ])
    nb.run_all(3)
    view = nb.agent_view(2)
    live = view.locator(".mentra-live:not(.mentra-thinking)")
    poll(lambda: len(live.text_content() or "") > 1_000, message="a few seconds of the reply on screen")
    shown = view.evaluate(STOP_WHILE_READING)
    agent = "nb.session().agent('writer')"
    poll(lambda: nb.kernel.value(f"{agent}.status.name") == "finished", message="the run to stop")
    kept = nb.kernel.value(f"{agent}.history[-1].text")
    assert nb.kernel.value(f"{agent}.history[-1].truncated") is True
    quarter_second = 0.25 / chunk_delay * len(" word1234")
    assert kept.startswith(shown[: len(kept)]) and shown.startswith(kept[: len(shown)])
    assert abs(len(kept) - len(shown)) <= quarter_second, (
        f"kept {len(kept)} characters, the page showed {len(shown)}")
    turn = nb.output(2)  # the turn's markdown, once it ended
    expect(turn).to_contain_text(kept[-40:])
