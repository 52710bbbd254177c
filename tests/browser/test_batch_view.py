"""The BatchView of `%mentra map` in a real JupyterLab: its counts move while the job
runs, the failed rows are listed, a click on one opens its transcript, and the saved
notebook keeps the job's markdown summary."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.notebook_page import poll, saved_outputs

ROWS = 12
FAILING = (3, 8)

# A scripted model, one row at a time (so its scripts go to the rows in order): each
# answer streams in a few slow chunks, and rows 3 and 8 are refused by the "server".
SETUP = f"""%load_ext mentra_nb
import mentra_nb.notebook as nb
import pandas as pd
from mentra_nb.errors import InvalidRequest
from mentra_nb.testing import ScriptedProvider, error_stream, text_stream

scripts = [error_stream([], InvalidRequest(f"refused: row {{i}} is too rude", status_code=400))
           if i in {FAILING!r} else text_stream(f"label {{i}} is positive", chunks=4, delay=0.15)
           for i in range({ROWS})]
nb.session().runtime.providers.register(ScriptedProvider("scripted", scripts))
reviews = pd.DataFrame({{"text": [f"review {{i}}" for i in range({ROWS})]}})"""

# Records every text the view's counts line takes, from the moment it is installed.
WATCH_COUNTS = """() => {
  window.__counts = [];
  const record = () => {
    const counts = document.querySelector('.mentra-batch .mentra-counts');
    if (counts) window.__counts.push(counts.textContent);
  };
  window.__countsObserver = new MutationObserver(record);
  window.__countsObserver.observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def test_the_progress_view_counts_live_lists_failures_and_opens_a_failed_rows_transcript(
        notebook, lab_server):
    nb = notebook.open([SETUP, "%mentra spawn clf --model scripted:m",
                        'job = %mentra map clf reviews --prompt "Classify: {text}" --concurrency 1 --name live'])
    nb.run_cell(0)
    nb.run_cell(1)
    nb.page.evaluate(WATCH_COUNTS)
    nb.run_cell(2)  # returns at once with the job; the view follows it
    view = nb.output(2).locator(".mentra-batch")
    expect(view.locator(".mentra-name")).to_have_text("live · clf")
    badge = view.locator(".mentra-badge")
    expect(badge).to_have_text("finished", timeout=60_000)
    expect(view.locator(".mentra-counts")).to_have_text(
        f"{ROWS - len(FAILING)} done · 0 running · {len(FAILING)} failed · 0 waiting · of {ROWS}")

    # While the view is live, the markdown copy saved above it is hidden (it once showed
    # twice: mentra.css hid the copy above the other live views only).
    summary_above = nb.output(2).locator(".jp-RenderedMarkdown", has_text="Batch job")
    expect(summary_above).to_have_count(1)
    expect(summary_above).to_be_hidden()

    # The counts moved while the job ran, not only at its end.
    seen = nb.page.evaluate("window.__counts")
    done = sorted({int(text.split(" done")[0]) for text in seen if " done" in text})
    between = [n for n in done if 0 < n < ROWS - len(FAILING)]
    assert len(between) >= 3, f"the view showed only these done counts: {done}"

    failures = view.locator(".mentra-list li")
    expect(failures).to_have_count(len(FAILING))
    for item, index in zip(failures.all(), FAILING, strict=True):
        expect(item).to_contain_text(f"row {index}")
        expect(item).to_contain_text(f"refused: row {index} is too rude")

    failures.nth(1).click()
    preview = view.locator(".mentra-preview")
    expect(preview.locator(".mentra-name").first).to_have_text(f"row {FAILING[1]} · live-{FAILING[1]}")
    expect(preview.locator(".mentra-transcript")).to_contain_text(f"Classify: review {FAILING[1]}")
    expect(preview.locator(".mentra-transcript")).to_contain_text(f"refused: row {FAILING[1]} is too rude")
    assert nb.kernel.value("job.progress().failed") == len(FAILING)

    nb.cell(2).locator(".jp-InputPrompt").click()  # out of the view, back to the notebook
    nb.page.keyboard.press("Control+s")
    saved = lab_server.root / nb.name

    def summary() -> str:
        # A saved multi-line string is a list of its lines.
        texts = ["".join(o.get("data", {}).get("text/markdown", "")) for o in saved_outputs(saved, 2)]
        return next((t for t in texts if "**Batch job `live`**" in t and ": finished" in t), "")

    text = poll(summary, message="the saved notebook to hold the job's summary")
    assert (f"{ROWS - len(FAILING)} done · 0 running · {len(FAILING)} failed · 0 waiting · of {ROWS}"
            in text)
    assert f"- row {FAILING[0]} (`live-{FAILING[0]}`): refused: row {FAILING[0]} is too rude" in text
    assert "Failed rows" in text
    # A reader without a kernel gets the summary, not a widget output it cannot show (the
    # view's output is kept in the copy's metadata, for a page reloaded while the kernel runs).
    outputs = saved_outputs(saved, 2)
    assert not any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
