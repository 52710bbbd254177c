"""Browser tests: one JupyterLab server per test session, one headless Chromium per module.

The server serves a temporary copy of `notebooks/` with fresh settings and
workspace folders; each test writes its own notebook there, opens it in a new
browser context, and gets a screenshot in `artifacts/browser/` whether it
passed or failed. Kernels, the browser and the server are stopped even when a
test fails or the run is interrupted.

Needs Debian's chromium (`apt-get install chromium`) and the `browser` extra
(Python playwright, which drives that Chromium; never `playwright install`).
Without chromium the tests are skipped, except under CI where that is a failure.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from tests.browser.lab_server import REPO, LabServer, copy_notebooks
from tests.conftest import missing

ARTIFACTS = REPO / "artifacts" / "browser"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    setattr(item, f"report_{report.when}", report)  # read by the screenshot fixture
    return report


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path:
        return path
    missing("Debian's chromium is not installed: apt-get install -y chromium")


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """This run's screenshots and server logs (a previous run's are removed)."""
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@contextlib.contextmanager
def serve(base: Path, app: Literal["jupyterlab", "notebook"] = "jupyterlab",
          python: str = sys.executable, collaborative: bool = False) -> Iterator[LabServer]:
    """A server on a fresh copy of notebooks/ under `base`, stopped whatever happens."""
    root = base / "notebooks"
    copy_notebooks(REPO / "notebooks", root)
    server = LabServer(root, base / "state", ARTIFACTS / f"{app}-{base.name}.log", app=app,
                       python=python, collaborative=collaborative)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory, artifacts: Path) -> Iterator[LabServer]:
    _chromium()  # skip before spending seconds on a server nobody will look at
    with serve(tmp_path_factory.mktemp("lab")) as server:
        yield server


@pytest.fixture(scope="session")
def notebook7_server(tmp_path_factory: pytest.TempPathFactory,
                     artifacts: Path) -> Iterator[LabServer]:
    _chromium()
    with serve(tmp_path_factory.mktemp("nb7"), app="notebook") as server:
        yield server


@pytest.fixture(scope="session")
def rtc_server(tmp_path_factory: pytest.TempPathFactory, artifacts: Path) -> Iterator[LabServer]:
    """JupyterLab with real-time collaboration (jupyter-collaboration) on."""
    _chromium()
    with serve(tmp_path_factory.mktemp("rtc"), collaborative=True) as server:
        yield server


@pytest.fixture(scope="module")
def browser(artifacts: Path):
    # Per module, not per session: playwright's sync API keeps an event loop
    # running in this thread while it is open, and the asyncio tests that follow
    # the browser modules cannot start their own loops until it has stopped.
    from playwright.sync_api import sync_playwright

    executable = _chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser, request: pytest.FixtureRequest):
    """A page in a fresh browser context; a screenshot of it lands in artifacts/browser/."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    # Actions and assertions wait up to 30 s (each returns as soon as it holds): a slow
    # or busy machine gets time; a fast one pays nothing. (`expect` would give 5 s.)
    context.set_default_timeout(30_000)
    expect.set_options(timeout=30_000)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    page.on("pageerror", lambda err: console.append(f"pageerror: {err}"))
    taken: list[bool] = []

    def screenshot() -> None:
        """Once per test, before its kernel is shut down (the notebook fixture calls it first)."""
        if taken:
            return
        taken.append(True)
        failed = any(getattr(getattr(request.node, f"report_{when}", None), "failed", False)
                     for when in ("setup", "call"))
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)
        try:
            page.screenshot(path=ARTIFACTS / f"{name}-{'failed' if failed else 'passed'}.png",
                            full_page=True)
        except Exception as err:  # a crashed page must not hide the test's own failure
            console.append(f"screenshot failed: {err}")
        (ARTIFACTS / f"{name}-console.log").write_text("\n".join(console))

    request.node.mentra_screenshot = screenshot
    try:
        yield page
    finally:
        try:
            screenshot()
        finally:
            context.close()


def open_notebook(page, server: LabServer, request: pytest.FixtureRequest):
    """A `NotebookPage` on `server` named after the test; its kernel is shut down afterwards."""
    from tests.browser.notebook_page import NotebookPage

    name = re.sub(r"[^A-Za-z0-9_-]", "_", request.node.name.removeprefix("test_"))[:60] + ".ipynb"
    nb = NotebookPage(page, server, name)
    try:
        yield nb
    finally:
        try:
            request.node.mentra_screenshot()
        finally:
            nb.close()
            for session in server.api("GET", "sessions"):
                if session["path"] == nb.name:  # a test may open an existing notebook instead
                    server.api("DELETE", f"sessions/{session['id']}")


@pytest.fixture
def notebook(page, lab_server: LabServer, request: pytest.FixtureRequest):
    """A notebook in JupyterLab."""
    yield from open_notebook(page, lab_server, request)


@pytest.fixture
def notebook7(page, notebook7_server: LabServer, request: pytest.FixtureRequest):
    """A notebook in Jupyter Notebook 7."""
    yield from open_notebook(page, notebook7_server, request)


@pytest.fixture
def notebook_rtc(page, rtc_server: LabServer, request: pytest.FixtureRequest):
    """A notebook in JupyterLab with real-time collaboration on."""
    yield from open_notebook(page, rtc_server, request)
