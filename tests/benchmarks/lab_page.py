"""A JupyterLab on 127.0.0.1 and a chromium page on it, for the benchmarks measured
in a real browser (lag, cells); everything is stopped whatever happens."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["lab_page"]


@contextlib.contextmanager
def lab_page(prefix: str, prepare: Callable[[Path], None] = lambda _root: None) -> Iterator[tuple[Any, Any]]:
    """(server, page): a fresh JupyterLab serving a temporary folder (`prepare(root)`
    writes its notebooks before the server starts) and a page of Debian's chromium."""
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM_ARGS
    from tests.browser.lab_server import LabServer

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise RuntimeError("Debian's chromium is not installed: apt-get install -y chromium")
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp) / "notebooks"
        root.mkdir()
        prepare(root)
        server = LabServer(root, Path(tmp) / "state", Path(tmp) / "lab.log")
        try:
            server.start()
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                try:
                    page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
                    page.set_default_timeout(60_000)
                    yield server, page
                finally:
                    browser.close()
        finally:
            server.stop()
