"""A Voila app serves every visitor (issue 36.2).

Voila starts a kernel for each page load and keeps it after the tab closes.
Every page's agents are its own (runtime id `<notebook>/voila-<kernel id>`, in the
notebook's own state file), so a second visitor, or a reload, never waits for the
first page's lease: before, the second page's `%mentra spawn writer` attached to
the first page's agent and failed with LeaseUnavailable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mentra_nb import SqliteStore
from tests.browser.conftest import ARTIFACTS
from tests.browser.notebook_page import write_notebook
from tests.browser.voila_server import VoilaServer

CELLS = ["%load_ext mentra_nb", "%mentra db", "%mentra spawn writer",
         "%mentra send writer --wait Hello from a visitor"]
RUNTIME_ID = re.compile(r"runtime id: (app/voila-[0-9a-f-]+)")


@pytest.fixture
def voila(tmp_path: Path, artifacts: Path) -> Iterator[VoilaServer]:
    app = tmp_path / "apps" / "app.ipynb"
    app.parent.mkdir()
    write_notebook(app, CELLS)
    server = VoilaServer(app, tmp_path / "state", ARTIFACTS / "voila.log")
    try:
        server.start()
        yield server
    finally:
        server.stop()


def agents_in(folder: Path) -> dict[str, list[str]]:
    """Runtime id -> names of the agents the notebook's state file holds."""
    store = SqliteStore(folder / ".mentra" / "app.sqlite")
    try:
        found: dict[str, list[str]] = {}
        for record in store.list_agents():
            found.setdefault(record.runtime_id, []).append(record.name)
        return found
    finally:
        store.close()


def test_two_concurrent_visitors_and_a_reload_each_get_their_own_agent(voila: VoilaServer):
    with ThreadPoolExecutor(2) as pool:
        pages = list(pool.map(lambda _: voila.get(), range(2)))
    pages.append(voila.get())  # a reload: the first pages' kernels are still alive
    for page in pages:
        assert "LeaseUnavailable" not in page and "Traceback" not in page, page[-3000:]
        assert "You said: Hello from a visitor" in page
    ids = [found[1] for found in map(RUNTIME_ID.search, pages) if found is not None]
    assert len(set(ids)) == 3
    # One state file for the app, beside it (Voila's command line names the notebook).
    assert agents_in(voila.notebook.parent) == {runtime_id: ["writer"] for runtime_id in ids}


def test_two_visitors_in_a_browser_each_talk_to_their_own_live_view(voila: VoilaServer, browser):
    contexts = [browser.new_context(viewport={"width": 1280, "height": 1000}) for _ in range(2)]
    try:
        pages = [context.new_page() for context in contexts]
        for context in contexts:
            context.set_default_timeout(60_000)
        for page in pages:
            page.goto(voila.url, wait_until="commit")
        for index, page in enumerate(pages):
            view = page.locator('.mentra-agent[data-mentra-scope="full"]').first
            view.locator(".mentra-transcript").get_by_text("You said: Hello from a visitor").wait_for()
            # The view is live: a message from its box reaches this visitor's agent.
            view.locator(".mentra-controls textarea").fill(f"visitor {index} here")
            view.locator("button.mentra-send").click()
            view.get_by_text(f"You said: visitor {index} here").wait_for()
        # Neither visitor sees the other's conversation.
        for index, page in enumerate(pages):
            assert page.get_by_text(f"You said: visitor {1 - index} here").count() == 0
        pages[0].reload(wait_until="commit")
        view = pages[0].locator('.mentra-agent[data-mentra-scope="full"]').first
        view.locator(".mentra-transcript").get_by_text("You said: Hello from a visitor").wait_for()
        assert pages[0].get_by_text("visitor 0 here").count() == 0  # a new page, a new agent
        view.locator(".mentra-controls textarea").fill("after the reload")
        view.locator("button.mentra-send").click()
        view.get_by_text("You said: after the reload").wait_for()
    finally:
        for index, context in enumerate(contexts):
            with_pages = context.pages
            if with_pages:
                with_pages[0].screenshot(path=ARTIFACTS / f"voila-visitor-{index}.png", full_page=True)
            context.close()
