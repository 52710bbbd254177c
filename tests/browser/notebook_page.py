"""Drive one notebook in JupyterLab like a person would, and ask its kernel directly.

`NotebookPage` writes a notebook into the server's folder, opens it, runs cells
with Shift+Enter and reads the rendered outputs. `KernelProbe` connects a
second jupyter_client to the same kernel (through its connection file) so a
test can check the kernel's side of what the page shows.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client import BlockingKernelClient
from playwright.sync_api import Locator, Page, expect

from tests.browser.lab_server import LabServer

CELL_TIMEOUT = 60_000  # ms

KERNEL_READY = """() => {
  const panel = window.jupyterapp?.shell.currentWidget;
  const kernel = panel?.sessionContext?.session?.kernel;
  return kernel?.connectionStatus === "connected" && kernel.status === "idle";
}"""


def write_notebook(path: Path, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(nb, path)


class KernelProbe:
    """A second client on the notebook's kernel: runs code, returns what it printed."""

    def __init__(self, connection_file: Path) -> None:
        self.client = BlockingKernelClient(connection_file=str(connection_file))
        self.client.load_connection_file()
        self.client.start_channels()
        # Not wait_for_ready: it also drains IOPub until the kernel stays quiet for
        # 0.2 s, which a view streaming a message every 150 ms never does, so a probe
        # opened mid-stream waited for the stream's end.
        self.client.kernel_info()
        self.client.get_shell_msg(timeout=30)

    def run(self, code: str, timeout: float = 30) -> str:
        chunks: list[str] = []
        errors: list[str] = []

        def collect(msg: dict[str, Any]) -> None:
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                chunks.append(content["text"])
            elif kind == "execute_result":
                chunks.append(content["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                errors.append(f"{content['ename']}: {content['evalue']}")

        reply = self.client.execute_interactive(code, timeout=timeout, output_hook=collect,
                                                store_history=False)
        if reply["content"]["status"] != "ok" or errors:
            raise AssertionError(f"kernel error in {code!r}: {errors or reply['content']}")
        return "".join(chunks)

    def value(self, expression: str) -> Any:
        """Evaluate `expression` in the kernel; it must give something json.dumps takes."""
        return json.loads(self.run(f"import json as _j; print(_j.dumps({expression}))"))

    def close(self) -> None:
        self.client.stop_channels()


class NotebookPage:
    """One notebook open in JupyterLab."""

    def __init__(self, page: Page, server: LabServer, name: str) -> None:
        self.page = page
        self.server = server
        self.name = name
        self._probe: KernelProbe | None = None

    # --- opening ------------------------------------------------------------------

    def open(self, cells: list[str]) -> NotebookPage:
        write_notebook(self.server.root / self.name, cells)
        return self.open_existing()

    def open_existing(self) -> NotebookPage:
        self.page.goto(self.server.url(self.name))
        expect(self.page.locator(".jp-NotebookPanel .jp-Cell").first).to_be_visible(timeout=60_000)
        self.wait_kernel_idle()
        return self

    def wait_kernel_idle(self, timeout: float = 60_000) -> None:
        """Until the notebook's kernel is connected and idle.

        The toolbar's indicator says "idle" before a kernel even exists, and a
        Shift+Enter then is silently dropped, so this asks JupyterLab itself
        (the server runs with `expose_app_in_browser`)."""
        self.page.wait_for_function(KERNEL_READY, timeout=timeout)

    # --- cells --------------------------------------------------------------------

    def cell(self, index: int) -> Locator:
        return self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").nth(index)

    def output(self, index: int) -> Locator:
        return self.cell(index).locator(".jp-OutputArea")

    def run_cell(self, index: int, wait: bool = True) -> Locator:
        """Select cell `index` and press Shift+Enter, as a person would."""
        cell = self.cell(index)
        cell.locator(".jp-InputPrompt").click()
        self.page.keyboard.press("Shift+Enter")
        if wait:
            self.wait_cell(index)
        return self.output(index)

    def wait_cell(self, index: int, timeout: float = CELL_TIMEOUT) -> None:
        """Until the cell's prompt shows an execution count: `[3]:`, not `[*]:` or `[ ]:`."""
        prompt = self.cell(index).locator(".jp-InputArea-prompt")
        expect(prompt).to_have_text(re.compile(r"\[\d+\]:"), timeout=timeout)

    def run_all(self, count: int) -> None:
        """Run the first `count` cells one by one, each to its end."""
        for index in range(count):
            self.run_cell(index)

    def run_all_from_menu(self, timeout: float = 120_000) -> None:
        """Run → Run All Cells, then wait until every code cell has run."""
        self.menu("Run", "Run All Cells")
        prompts = self.page.locator(".jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt")
        for index in range(prompts.count()):
            expect(prompts.nth(index)).to_have_text(re.compile(r"\[\d+\]:"), timeout=timeout)

    def menu(self, *path: str) -> None:
        """Click through the menu bar: `menu("Kernel", "Restart Kernel…")`."""
        self.page.locator(".lm-MenuBar-itemLabel").get_by_text(path[0], exact=True).click()
        for label in path[1:]:
            self.page.locator(".lm-Menu-itemLabel").get_by_text(label, exact=True).click()

    def agent_view(self, index: int) -> Locator:
        """The AgentView widget in cell `index`'s output (the last one, if several)."""
        return self.output(index).locator(".mentra-agent").last

    # --- the kernel behind it -----------------------------------------------------

    @property
    def kernel(self) -> KernelProbe:
        if self._probe is None:
            kernel = self.server.kernel_for(self.name)
            self._probe = KernelProbe(self.server.connection_file(kernel["id"]))
        return self._probe

    def forget_kernel(self) -> None:
        """After a restart the connection file is the same, but a fresh client is safer."""
        if self._probe is not None:
            self._probe.close()
            self._probe = None

    def close(self) -> None:
        self.forget_kernel()


def poll(predicate: Any, timeout: float = 30, interval: float = 0.1, message: str = "") -> Any:
    """Call `predicate` until it returns something truthy; return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message or predicate}")
        time.sleep(interval)


def saved_outputs(path: Path, cell: int) -> list:
    """The outputs of `cell` in the saved notebook at `path`; [] while the server is
    still writing it (a save replaces the file's text, and a read can land between)."""
    try:
        return json.loads(path.read_text())["cells"][cell]["outputs"]
    except (ValueError, KeyError, IndexError):
        return []
