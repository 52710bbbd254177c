"""The widgets look and act like JupyterLab's own (issue 15): theme colours in
light, dark and high-contrast themes (screenshots in artifacts/browser/),
JupyterLab's buttons, a bounded height with "Show more", highlighted code that
copies and inserts itself as a new cell (JupyterLab and Notebook 7), maths,
tables, links, Stop's "stopping…", teammates' transcripts, one place to answer
a request.

Each test writes a notebook whose agents run on scripted models, runs it with
Shift+Enter and checks the page (and, where it matters, the kernel). The tests
read the spawn cell's view (the whole conversation), which stays a live widget
however a finished turn's own cell is shown.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.conftest import ARTIFACTS
from tests.browser.notebook_page import poll

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb"

CODE = "import pandas as pd\\n\\ndef load(path):\\n    return pd.read_csv(path)  # one table"
REPLY = ("Here is **the plan**, see [the docs](https://example.org/docs).\\n\\n"
         f"```python\\n{CODE}\\n```\\n\\n"
         "| step | what |\\n|---|---|\\n| 1 | load |\\n| 2 | clean |\\n\\n"
         "Euler: $e^{i\\\\pi}+1=0$\\n\\n" + "".join(f"Line {i} of a long answer.\\n\\n" for i in range(60)))

MODELS = f'''
from mentra_nb import tool
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

@tool(requires_approval=True)
def drop_rows(table: str) -> str:
    """Delete a table's old rows."""
    return f"dropped {{table}}"

nb.session().runtime.register_tool(drop_rows)
nb.session().runtime.providers.register(ScriptedProvider("look", [
    text_stream("{REPLY}"),
    tool_use_stream("c1", "drop_rows", '{{"table": "events"}}'),
    text_stream("Dropped."),
]))
nb.session().runtime.providers.register(ScriptedProvider("slow", [
    text_stream("word " * 400, chunks=400, delay=0.05),
]))
'''

# The colour a reader sees: every background from the page down to `el`
# composited on a canvas, then the text colour (alpha included) over them.
SEEN_COLOURS = """(el) => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const chain = [];
  for (let n = el; n; n = n.parentElement) chain.unshift(getComputedStyle(n).backgroundColor);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, 1, 1);
  for (const colour of chain) { ctx.fillStyle = colour; ctx.fillRect(0, 0, 1, 1); }
  const bg = Array.from(ctx.getImageData(0, 0, 1, 1).data.slice(0, 3));
  ctx.fillStyle = getComputedStyle(el).color;
  ctx.fillRect(0, 0, 1, 1);
  const fg = Array.from(ctx.getImageData(0, 0, 1, 1).data.slice(0, 3));
  return {fg, bg, color: getComputedStyle(el).color, background: chain[chain.length - 1]};
}"""

THEMES = ["JupyterLab Light", "JupyterLab Dark", "JupyterLab Dark High Contrast"]


def contrast(fg: list[int], bg: list[int]) -> float:
    """WCAG 2 contrast ratio of two sRGB colours."""
    def luminance(rgb: list[int]) -> float:
        channels = [c / 255 for c in rgb]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def set_theme(page, theme: str) -> None:
    page.evaluate("t => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})", theme)
    page.wait_for_function("t => document.body.dataset.jpThemeName === t", arg=theme, timeout=30_000)
    # The theme's stylesheet lands after the attribute: wait until its variables apply.
    page.wait_for_function(
        """([t, light]) => document.body.dataset.jpThemeLight === String(light) &&
             getComputedStyle(document.body).getPropertyValue('--jp-layout-color1').trim() !== ''""",
        arg=[theme, theme == "JupyterLab Light"], timeout=30_000)
    page.wait_for_timeout(500)  # let the new stylesheet paint before the screenshot (not an assertion)


def test_views_read_well_in_light_dark_and_high_contrast_themes(notebook):
    nb = notebook.open([SETUP, MODELS, "%mentra spawn writer --model look:scripted --tools drop_rows",
                        "%%mentra writer --wait\nShow me the plan",
                        "%%mentra writer\nDrop the old rows"])
    nb.run_all(5)
    view = nb.agent_view(4)
    approval = view.locator(".mentra-approval")
    expect(approval).to_have_count(1, timeout=30_000)
    # One view of the agent holds the buttons; the spawn cell's points at it.
    expect(nb.page.locator(".mentra-approval")).to_have_count(1)
    expect(nb.agent_view(2).locator(".mentra-approvals")).to_contain_text("waits for your approval")
    # ... and the call shows in the transcript and the box, not a third time as a live call.
    expect(view.locator(".mentra-live-tool")).to_have_count(0)
    expect(view.locator("details.mentra-tool summary")).to_have_text("tool call: drop_rows")
    for selector, classes in ((".mentra-approve", "jp-mod-accept"), (".mentra-deny", "jp-mod-warn"),
                              (".mentra-stop", "jp-mod-warn"), (".mentra-send", "jp-mod-accept")):
        expect(view.locator(selector)).to_have_class(re.compile(rf"\bjp-Button\b.*\bjp-mod-styled\b.*\b{classes}\b"))

    seen: dict[str, dict[str, dict]] = {}
    try:
        for theme in THEMES:
            set_theme(nb.page, theme)
            slug = theme.lower().replace(" ", "-")
            view.scroll_into_view_if_needed()
            view.screenshot(path=ARTIFACTS / f"native-look-{slug}.png")
            nb.agent_view(2).screenshot(path=ARTIFACTS / f"native-look-{slug}-conversation.png")
            colours = {
                "approval": approval.locator(".mentra-name").evaluate(SEEN_COLOURS),
                "approval input": approval.locator("pre").evaluate(SEEN_COLOURS),
                "badge": view.locator(".mentra-badge").evaluate(SEEN_COLOURS),
                "message": nb.agent_view(2).locator('.mentra-item[data-role="assistant"] p').first.evaluate(SEEN_COLOURS),
                "link": nb.agent_view(2).locator(".mentra-body a").first.evaluate(SEEN_COLOURS),
                "code keyword": nb.agent_view(2).locator(".mentra-code .kn").first.evaluate(SEEN_COLOURS),
            }
            seen[theme] = colours
            for part in ("approval", "approval input", "badge", "message"):
                ratio = contrast(colours[part]["fg"], colours[part]["bg"])
                assert ratio >= 4.5, f"{part} in {theme}: contrast {ratio:.2f} ({colours[part]})"
            for part in ("link", "code keyword"):
                ratio = contrast(colours[part]["fg"], colours[part]["bg"])
                assert ratio >= 3, f"{part} in {theme}: contrast {ratio:.2f} ({colours[part]})"
    finally:
        set_theme(nb.page, "JupyterLab Light")  # the server (and its settings) serve the next tests
    light, dark = seen["JupyterLab Light"], seen["JupyterLab Dark"]
    for part in ("approval", "badge", "message"):
        assert light[part]["fg"] != dark[part]["fg"] and light[part]["bg"] != dark[part]["bg"], part
    assert seen["JupyterLab Dark High Contrast"]["message"] != dark["message"]


# A reply the test streams by hand: it is still streaming for as long as the test needs.
HELD_STREAM = """
from mentra_nb.providers import (ContentBlockDelta, ContentBlockStarted, ContentBlockStopped,
                                 MessageDelta, MessageStarted, MessageStopped)
from mentra_nb.testing import ScriptedProvider, controlled_stream
held, control = controlled_stream()
nb.session().runtime.providers.register(ScriptedProvider("held", [held]))

def feed(*events):
    # The stream's queue lives on the runtime's loop.
    for event in events:
        nb.session().host.call(lambda event=event: control.send(event))

feed(MessageStarted(id="m1", model="held"), ContentBlockStarted.text(0))
"""
STREAMED = ("Sales by region, from the 1,204 rows of df: North leads with 412,300 (38%), then "
            "South with 301,950 (28%), East with 221,400 (20%) and West with 150,720 (14%).\n\n"
            "North leads in every quarter; the West fell behind in Q3, when")
DOCS_IMAGES = ARTIFACTS.parents[1] / "docs" / "images"


def test_a_streaming_turn_view_reads_well_in_light_and_dark_themes(notebook, request):
    """A turn view mid-stream, in JupyterLab's light and dark themes: the live text keeps
    its contrast. With --docs-screenshots its pictures become the docs' (docs/images/)."""
    nb = notebook.open([SETUP, HELD_STREAM, "%mentra spawn writer --model held:scripted",
                        "%%mentra writer\nSummarise the sales data by region."])
    nb.run_all(4)
    view = nb.agent_view(3)
    nb.kernel.run(f"feed(ContentBlockDelta.text(0, {STREAMED!r}))")
    live = view.locator(".mentra-live:not(.mentra-thinking)")
    expect(live).to_contain_text("when", timeout=30_000)
    expect(view.locator(".mentra-badge")).to_have_text("streaming")
    try:
        for theme in ("JupyterLab Light", "JupyterLab Dark"):
            set_theme(nb.page, theme)
            slug = theme.lower().removeprefix("jupyterlab ")
            view.scroll_into_view_if_needed()
            view.screenshot(path=ARTIFACTS / f"streaming-{slug}.png")
            if request.config.getoption("--docs-screenshots"):
                view.screenshot(path=DOCS_IMAGES / f"streaming-{slug}.png")
            colours = live.evaluate(SEEN_COLOURS)
            ratio = contrast(colours["fg"], colours["bg"])
            assert ratio >= 4.5, f"live text in {theme}: contrast {ratio:.2f} ({colours})"
    finally:
        set_theme(nb.page, "JupyterLab Light")
        nb.kernel.run("feed(ContentBlockStopped(index=0), MessageDelta(stop_reason='end_turn'), MessageStopped())")
    # The ended turn's view gives its place to the turn's transcript as markdown.
    expect(nb.output(3).locator(".mentra-agent")).to_have_count(0, timeout=30_000)
    expect(nb.output(3)).to_contain_text("turn 1 · finished")


def test_a_long_reply_is_bounded_shows_more_and_its_markdown_renders(notebook):
    nb = notebook.open([SETUP, MODELS, "%mentra spawn writer --model look:scripted",
                        "%%mentra writer --wait\nShow me the plan"])
    nb.run_all(4)
    view = nb.agent_view(2)
    reply = view.locator('.mentra-item[data-role="assistant"]')
    expect(reply).to_contain_text("Line 59 of a long answer.")
    viewport = nb.page.viewport_size or {"height": 1000}
    scroll_box = view.locator(".mentra-scroll").bounding_box()
    assert scroll_box and scroll_box["height"] <= 0.7 * viewport["height"] + 1
    body = reply.locator(".mentra-body")
    clamped = body.evaluate("b => b.clientHeight")
    more = reply.locator(".mentra-more")
    expect(more).to_be_visible()
    more.click()
    expect(more).to_have_text("Show less")
    assert body.evaluate("b => b.clientHeight") > 2 * clamped
    # The prompt is short: no toggle.
    expect(view.locator('.mentra-item[data-role="user"] .mentra-more')).to_be_hidden()

    expect(reply.locator("table th").first).to_have_text("step")
    assert reply.locator("table td").first.evaluate("td => getComputedStyle(td).borderTopStyle") == "solid"
    link = reply.locator(".mentra-body a")
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("href", "https://example.org/docs")
    maths = reply.locator("math")
    expect(maths).to_have_attribute("display", "inline")
    assert maths.evaluate("m => m.getBoundingClientRect().width") > 20  # typeset, not raw text
    expect(reply).not_to_contain_text("$e^")
    keyword = reply.locator(".mentra-code .k", has_text="def")
    expect(keyword).to_have_count(1)
    plain = reply.locator(".mentra-code code").first  # names are the code's own colour
    assert keyword.evaluate("k => getComputedStyle(k).color") != plain.evaluate("c => getComputedStyle(c).color")
    expect(reply.locator(".mentra-code code").first).to_have_text(CODE.replace("\\n", "\n") + "\n")


def code_cells(page) -> list[str]:
    """The source of every cell in the open notebook, as its editors show it."""
    return page.locator(".jp-Notebook .jp-Cell .jp-InputArea-editor").evaluate_all(
        "eds => eds.map(e => Array.from(e.querySelectorAll('.cm-line')).map(l => l.textContent).join('\\n'))")


def check_copy_and_insert(nb, view_cell: int) -> None:
    code = CODE.replace("\\n", "\n")
    block = nb.agent_view(view_cell).locator(".mentra-code").first
    block.hover()
    nb.page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=nb.server.base_url)
    block.locator(".mentra-copy").click()
    expect(block.locator(".mentra-copy")).to_have_text("Copied")
    assert nb.page.evaluate("navigator.clipboard.readText()") == code
    before = code_cells(nb.page)
    block.locator(".mentra-insert").click()
    expect(block.locator(".mentra-insert")).to_have_text("Inserted")
    def one_more() -> list[str] | None:
        cells = code_cells(nb.page)
        return cells if len(cells) == len(before) + 1 else None

    after = poll(one_more, message="a new cell")
    assert after[view_cell + 1] == code, after
    assert after[:view_cell + 1] == before[:view_cell + 1] and after[view_cell + 2:] == before[view_cell + 1:]


def test_code_copies_and_inserts_itself_as_a_new_cell_below_in_jupyterlab(notebook):
    nb = notebook.open([SETUP, MODELS, "%mentra spawn writer --model look:scripted",
                        "%%mentra writer --wait\nShow me the plan", "print('last cell')"])
    nb.run_all(4)
    check_copy_and_insert(nb, 2)


def test_code_inserts_itself_as_a_new_cell_below_in_notebook7(notebook7):
    nb = notebook7.open([SETUP, MODELS, "%mentra spawn writer --model look:scripted",
                         "%%mentra writer --wait\nShow me the plan"])
    nb.run_all(4)
    check_copy_and_insert(nb, 2)


def test_finish_round_shows_stopping_at_once_and_stop_still_cuts_it_short(notebook):
    nb = notebook.open([SETUP, MODELS, "%mentra spawn reader --model slow:scripted",
                        "%%mentra reader\nRead slowly"])
    nb.run_all(4)
    view = nb.agent_view(2)
    badge = view.locator(".mentra-badge")
    expect(badge).to_have_text("streaming", timeout=30_000)
    # One long round: Finish round waits for its end, and says so meanwhile.
    view.locator(".mentra-finish").click()
    expect(badge).to_have_text("stopping…", timeout=1_000)
    expect(view.locator(".mentra-finish")).to_be_disabled()
    expect(view.locator(".mentra-stop")).to_be_enabled()
    assert poll(lambda: nb.kernel.value("nb.session().agent('reader').stopping"),
                message="the kernel to hear of the stop") == "round"
    expect(badge).to_have_text("stopping…")  # the kernel's status says so too now
    view.locator(".mentra-stop").click()
    expect(badge).to_have_text("finished", timeout=30_000)
    assert nb.kernel.value("nb.session().agent('reader').status.is_running") is False


TEAM = '''
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

nb.session().runtime.providers.register(ScriptedProvider("alice_model", [
    tool_use_stream("a1", "team_request",
                    '{"to": "lead", "protocol": "plan_approval", "content": "Read the tide pool guide."}'),
    text_stream("Waiting for **approval**."),
]))
nb.session().runtime.providers.register(ScriptedProvider("bob_model", [text_stream("Title drafted.")]))
nb.session().runtime.providers.register(ScriptedProvider("lead_model", []))
'''


def test_a_request_shows_once_and_a_teammate_row_opens_its_transcript(notebook):
    # As tutorial 03: the team shows in the spawn cell and after each teammate joins.
    nb = notebook.open([SETUP, TEAM, "lead = %mentra spawn lead --model lead_model:scripted --team\n%mentra team lead",
                        "%mentra teammate lead alice --role researcher --model alice_model:scripted --prompt 'Facts.'\n"
                        "%mentra teammate lead bob --role editor --model bob_model:scripted --prompt 'A title.'"])
    nb.run_all(4)
    teams = nb.page.locator(".mentra-team")
    expect(teams).to_have_count(3)
    expect(nb.page.locator(".mentra-request")).to_have_count(1)
    newest = teams.nth(2)
    expect(newest.locator(".mentra-request .mentra-name")).to_have_text("plan_approval from alice")
    expect(teams.nth(0)).to_contain_text("1 request waits for you in the newest view of this team")

    alice = teams.nth(0).locator('li[data-name="alice"]')
    alice.click()
    preview = alice.locator(".mentra-preview")
    expect(preview.locator(".mentra-item strong")).to_have_text("approval")
    expect(preview).to_contain_text("Facts.")
    expect(preview.locator("details.mentra-tool summary")).to_have_text("tool call: team_request")
    # What is open is this view's: the other views of the team show no transcript,
    # and one of them can open another teammate's at the same time.
    expect(teams.nth(1).locator(".mentra-preview")).to_have_count(0)
    expect(newest.locator(".mentra-preview")).to_have_count(0)
    bob = newest.locator('li[data-name="bob"]')
    bob.click()
    expect(bob.locator(".mentra-preview")).to_contain_text("A title.")
    expect(preview).to_contain_text("Facts.")  # alice's, still open in the first view
    expect(teams.nth(0).locator(".mentra-preview")).to_have_count(1)
    bob.locator(".mentra-close").click()
    try:
        for theme in ("JupyterLab Light", "JupyterLab Dark"):
            set_theme(nb.page, theme)
            slug = theme.lower().replace(" ", "-")
            for index in (0, 2):
                teams.nth(index).screenshot(path=ARTIFACTS / f"native-look-team-{index}-{slug}.png")
            for part in (newest.locator(".mentra-request .mentra-name"), newest.locator(".mentra-request pre"),
                         preview.locator(".mentra-item p").first):
                colours = part.evaluate(SEEN_COLOURS)
                ratio = contrast(colours["fg"], colours["bg"])
                assert ratio >= 4.5, f"team view in {theme}: contrast {ratio:.2f} ({colours})"
    finally:
        set_theme(nb.page, "JupyterLab Light")
    preview.locator(".mentra-close").click()
    expect(alice.locator(".mentra-preview")).to_have_count(0)


def test_a_turn_view_links_to_the_whole_conversation_and_stop_marks_the_cut_reply(notebook):
    nb = notebook.open([SETUP, MODELS, "%mentra spawn reader --model slow:scripted",
                        "%%mentra reader\nRead slowly"])
    nb.run_all(4)
    full, turn = nb.agent_view(2), nb.agent_view(3)
    expect(full).to_have_attribute("data-mentra-scope", "full")
    expect(turn).to_have_attribute("data-mentra-scope", "turn")
    expect(turn).to_have_attribute("data-mentra-agent", "reader")
    expect(full.locator(".mentra-full-link")).to_be_hidden()
    expect(turn.locator(".mentra-badge")).to_have_text("streaming", timeout=30_000)

    # Clicked as DOM events, not by pointer: the full view above grows a line at a time
    # while it streams, moving the turn view down, and a pointer click aimed before a
    # line lands can hit the gap beside its target (it did once, on a loaded machine).
    turn.locator(".mentra-full-link").dispatch_event("click")
    expect(full).to_have_class(re.compile(r"\bmentra-highlight\b"))
    expect(full).to_be_in_viewport()

    # Stopped once words streamed (a Stop before any text is a cancel: rolled back,
    # the prompt kept to resume, as the runtime's tests check).
    expect(turn.locator(".mentra-live:not(.mentra-thinking)")).to_contain_text("word", timeout=30_000)
    turn.locator(".mentra-stop").dispatch_event("click")
    expect(full.locator(".mentra-badge")).to_have_text("finished", timeout=30_000)
    reply = full.locator('.mentra-item[data-role="assistant"]')
    expect(reply).to_have_attribute("data-truncated", "true")
    expect(reply.locator(".mentra-truncated")).to_have_text(re.compile("^stopped here"))
    text = nb.kernel.value("nb.session().agent('reader').history[-1].text")
    assert 0 < len(text) < len("word " * 400)  # cut, and kept


def test_a_turn_view_without_a_full_view_in_the_page_says_how_to_show_one(notebook):
    nb = notebook.open([SETUP, MODELS, "%mentra spawn reader --model slow:scripted",
                        "%%mentra reader\nRead slowly"])
    nb.run_all(4)
    turn = nb.agent_view(3)
    expect(turn.locator(".mentra-badge")).to_have_text("streaming", timeout=30_000)
    nb.cell(2).locator(".jp-InputPrompt").click()
    nb.page.evaluate("window.jupyterapp.commands.execute('notebook:clear-cell-output')")
    expect(nb.output(2).locator(".mentra-agent")).to_have_count(0)
    turn.locator(".mentra-full-link").click()
    expect(turn.locator(".mentra-header-notice")).to_have_text(
        "no full view of reader in this notebook: run %mentra show reader")
    turn.locator(".mentra-interrupt").click()
