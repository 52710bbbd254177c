"""A marimo app shows a live AgentView through the public `RuntimeHost` (issue 36.5).

marimo renders anywidgets with `mo.ui.anywidget`, but building a view needed the
private host; and marimo has no `--jp-*` theme variables, so every state colour
fell back to the text colour (a monochrome view). The app runs headless
(`marimo run --headless`) on 127.0.0.1 and Chromium opens it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import ARTIFACTS
from tests.browser.lab_server import _free_port, stop_process_tree

APP = '''
import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    from mentra_nb import Runtime, SqliteStore
    from mentra_nb.notebook import AgentView, RuntimeHost

    host = RuntimeHost()
    rt = host.call(lambda: Runtime(store=SqliteStore("app.sqlite"), runtime_id="marimo"))
    writer = host.call(lambda: rt.spawn("writer", "test"))
    host.submit(writer.send("Hello from marimo")).result(60)
    view = mo.ui.anywidget(AgentView(writer, host))
    view
    return (view,)
'''


@pytest.fixture
def marimo_app(tmp_path: Path, artifacts: Path) -> Iterator[str]:
    (tmp_path / "app.py").write_text(APP)
    port = _free_port()
    log = (ARTIFACTS / "marimo.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "marimo", "run", "app.py", "--headless", "--host", "127.0.0.1",
         "-p", str(port), "--no-token", "--no-sandbox", "--no-check"],
        cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        # No request to PyPI for a newer marimo, and none of the developer's settings.
        env={**os.environ, "MARIMO_SKIP_UPDATE_CHECK": "1", "XDG_CONFIG_HOME": str(tmp_path / "config"),
             "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (ARTIFACTS / "marimo.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(url, timeout=5):
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                assert time.monotonic() < deadline, "marimo did not answer within 60 s"
                time.sleep(0.2)
        yield url
    finally:
        stop_process_tree(process)
        log.close()


def hue(colour: str) -> float:
    """How far a computed colour (`rgb(...)` or `color(srgb ...)`) is from a grey: 0..1."""
    numbers = [float(n) for n in colour.split("(", 1)[1].rstrip(")").replace(",", " ").split()
               if n.replace(".", "", 1).isdigit()][:3]
    scale = 255 if colour.startswith("rgb") else 1
    return (max(numbers) - min(numbers)) / scale


def test_a_marimo_app_shows_a_live_agent_view_in_colour(marimo_app: str, page):
    page.goto(marimo_app)
    view = page.locator(".mentra-agent").first
    view.locator(".mentra-transcript").get_by_text("You said: Hello from marimo").wait_for(timeout=60_000)
    # The view is live: its message box reaches the agent, and the reply streams back.
    view.locator(".mentra-controls textarea").fill("and from the view")
    view.locator("button.mentra-send").click()
    view.locator(".mentra-transcript").get_by_text("You said: and from the view").wait_for(timeout=60_000)
    # No --jp-* variables here: the states still read in colour (not the text's grey).
    badge = view.locator(".mentra-badge")
    assert badge.inner_text() == "finished"
    assert hue(badge.evaluate("el => getComputedStyle(el).borderTopColor")) > 0.2
    reply = view.locator('.mentra-item[data-role="assistant"]').first
    assert hue(reply.evaluate("el => getComputedStyle(el).borderLeftColor")) > 0.2
