"""11. `run_cell` against the same cell run by the user, in a real browser.

JupyterLab (on 127.0.0.1) and Debian's chromium, driven by Playwright. One code
cell (`sum(range(100_000))`, printed) is run five times by Shift+Enter, timed
from the key press to its prompt showing the new `In [n]`, and five times by an
agent's `run_cell` (auto-approved), timed from the model's tool call (the end of
its reply) to the model's next call (the run's outputs in hand). The wire: the
bytes of the bridge's comm messages (the kernel's request and the page's reply),
read from the page's kernel websocket frames; the cell's own execute request and
outputs are the same bytes a user's run sends, and are not counted.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from tests.benchmarks.report import Table, ratio

__all__ = ["run"]

RUNS = 5
CODE = "total = sum(range(100_000))\nprint('total', total)"

SETUP = """
%load_ext mentra_nb
import time
import mentra_nb.notebook as nb
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
CALLS = []  # per model call: [wall time it started, wall time of its reply's last event]
class Stamped(ScriptedProvider):
    async def stream(self, request):
        CALLS.append([time.time(), None])
        async for event in super().stream(request):
            CALLS[-1][1] = time.time()  # (the loop may not ask past the reply's last event)
            yield event
nb.session().runtime.providers.register(Stamped('bench', [
    *(tool_use_stream(f"r{i}", "run_cell", '{"cell": "work"}') for i in range(RUNS)), text_stream("all runs done")]))
"""

PROMPT_WATCH = """(index) => {
  const prompt = document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell')[index]
    .querySelector('.jp-InputArea-prompt');
  const before = prompt.textContent;
  window.__mentraDone = null;
  const observer = new MutationObserver(() => {
    if (/\\[\\d+\\]/.test(prompt.textContent) && prompt.textContent !== before) {
      window.__mentraDone = Date.now();
      observer.disconnect();
    }
  });
  observer.observe(prompt, {subtree: true, childList: true, characterData: true});
}"""


def _notebook(path: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    for cell_id, source in [("setup", SETUP.replace("RUNS", str(RUNS))), ("work", CODE),
                            ("spawn", "%mentra spawn runner --model bench:m --auto-approve run_cell"),
                            ("ask", "%%mentra runner\nrun the work cell")]:
        cell = nbformat.v4.new_code_cell(source)
        cell.id = cell_id
        nb.cells.append(cell)
    nbformat.write(nb, path)


def measure() -> dict[str, Any]:
    from playwright.sync_api import expect

    from tests.benchmarks.lab_page import lab_page
    from tests.browser.notebook_page import NotebookPage, poll

    frames: list[tuple[str, bytes]] = []
    with lab_page("mentra-bench-cells-", lambda root: _notebook(root / "cells.ipynb")) as (server, page):

        def tap(ws: Any) -> None:
            for kind in ("framesent", "framereceived"):
                ws.on(kind, lambda payload, kind=kind: frames.append(
                    (kind, payload if isinstance(payload, bytes) else payload.encode())))

        page.on("websocket", tap)
        nb = NotebookPage(page, server, "cells.ipynb").open_existing()
        try:
            nb.run_cell(0)
            user = []
            for _ in range(RUNS):
                page.evaluate(PROMPT_WATCH, 1)
                nb.cell(1).locator(".jp-InputPrompt").click()
                started = time.time()
                page.keyboard.press("Control+Enter")  # run in place, as Shift+Enter runs
                done = poll(lambda: page.evaluate("window.__mentraDone"), message="the user's run")
                user.append(done / 1000 - started)
            nb.run_cell(2)
            comm = nb.kernel.value("nb.session().cell_bridge.comm.comm_id").encode()
            frames.clear()
            nb.run_cell(3)
            # (watched in the page: a probe of the kernel would queue among the runs)
            expect(page.locator(".mentra-agent").last).to_contain_text("all runs done", timeout=120_000)
            calls = nb.kernel.value("CALLS")
        finally:
            nb.close()
    agent = [calls[i + 1][0] - calls[i][1] for i in range(RUNS)]
    ours = [(kind, len(payload)) for kind, payload in frames if comm in payload and b"comm_msg" in payload]
    return {"user": user, "agent": agent,
            "sent": sum(n for kind, n in ours if kind == "framesent") / RUNS,
            "received": sum(n for kind, n in ours if kind == "framereceived") / RUNS,
            "messages": len(ours) / RUNS}


def run() -> list[Table]:
    r = measure()
    user, agent = statistics.median(r["user"]), statistics.median(r["agent"])
    table = Table("run_cell vs the user's own run of the same cell (JupyterLab, chromium, idle kernel)",
                  ["how", "median ms", "min ms", "max ms", "vs the user"])
    table.add("the user: Ctrl+Enter to In [n] on screen", f"{user * 1000:.0f}", f"{min(r['user']) * 1000:.0f}",
              f"{max(r['user']) * 1000:.0f}", "1.00x")
    table.add("the agent: run_cell call to its result", f"{agent * 1000:.0f}", f"{min(r['agent']) * 1000:.0f}",
              f"{max(r['agent']) * 1000:.0f}", ratio(user, agent))
    wire = Table("Bytes the cell tools add on the wire per run_cell call", ["comm messages", "kernel → page bytes",
                                                                       "page → kernel bytes"])
    wire.add(f"{r['messages']:.0f}", f"{r['received']:.0f}", f"{r['sent']:.0f}")
    table.notes += ["target: the agent's round trip ≤ 1.2x the user's on an idle kernel",
                    f"{RUNS} runs each of `{CODE.splitlines()[0]}` and a print; the agent's includes its "
                    "turn loop between the model's call and the next request (auto-approved, no approval wait)"]
    wire.notes += ["the bridge's request and the page's reply (the cell with its outputs, bounded), as websocket "
                   "frames; the execution's own messages are a user's run's and are not counted"]
    return [table, wire]


if __name__ == "__main__":
    for t in run():
        print(t.text(), end="\n\n")
