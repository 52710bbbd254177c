"""11. `run_cell` against the same cell run by the user, in a real browser.

JupyterLab (on 127.0.0.1) and Debian's chromium, driven by Playwright. One code
cell (`sum(range(100_000))`, printed) is run by Ctrl+Enter, timed in the page
from the key press to its prompt showing the new `In [n]`, and by an agent's
`run_cell` (auto-approved), timed from the model's tool call (the end of its
reply) to the model's next call (the run's outputs in hand). One run of each
warms up and is not counted.

Where the time goes: the page stamps every websocket frame of the kernel's
connection as it arrives or leaves (a wrapped `WebSocket`, installed before
JupyterLab loads), the kernel stamps each cell's start and end (IPython's
`pre_run_cell`/`post_run_cell` events), and every kernel message carries the
moment the kernel made it (its header's `date`). Page and kernel share the
machine's clock, so the path splits into stages: the user's run crosses the
page-kernel boundary twice (execute request in, reply out), the agent's four
times (its request to the page, the execute request, the reply, the page's
answer).

The wire: the bytes of the bridge's comm messages (the kernel's request and the
page's reply), read from the page's kernel websocket frames; the cell's own
execute request and outputs are the same bytes a user's run sends, and are not
counted.
"""

from __future__ import annotations

import datetime
import statistics
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
    *(tool_use_stream(f"r{i}", "run_cell", '{"cell": "work"}') for i in range(TOOL_CALLS)),
    text_stream("all runs done")]))
CELL_TIMES = []  # per cell the kernel runs: [wall time it started, wall time it ended]
get_ipython().events.register('pre_run_cell', lambda info: CELL_TIMES.append([time.time(), None]))
get_ipython().events.register('post_run_cell', lambda result: CELL_TIMES[-1].__setitem__(1, time.time()))
"""

# Installed before the page's scripts run: every frame of every websocket, stamped
# with the page's clock, as [ms, "in"|"out", msg_type, bridge kind, op, header date].
FRAME_STAMPS = r"""
(() => {
  const frames = window.__mentraFrames = [];
  const decoder = new TextDecoder();
  const find = (text, key) => (text.match(new RegExp(`"${key}"\\s*:\\s*"([^"]*)"`)) || [])[1] || "";
  const stamp = (direction, data) => {
    if (typeof data !== "string" && !(data instanceof ArrayBuffer) && !ArrayBuffer.isView(data)) return;
    const at = Date.now();
    const text = typeof data === "string" ? data : decoder.decode(data);
    // (the header comes first in both wire formats: its date is the first date)
    frames.push([at, direction, find(text, "msg_type"), find(text, "kind"), find(text, "op"), find(text, "date")]);
  };
  class StampedSocket extends window.WebSocket {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => stamp("in", event.data));
    }
    send(data) {
      stamp("out", data);
      return super.send(data);
    }
  }
  window.WebSocket = StampedSocket;
  window.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.ctrlKey) window.__mentraPress = Date.now();
  }, true);
})();
"""

FINISHED = "() => [...document.querySelectorAll('.mentra-agent')].some((v) => v.textContent.includes('all runs done'))"

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

USER_STAGES = ["page: key press → execute_request sent", "page → kernel: the execute_request",
               "kernel: the cell runs", "kernel → page: the execute_reply",
               "page: execute_reply → In [n] on screen"]
AGENT_STAGES = ["kernel: the model's reply → the bridge's request sent", "kernel → page: the request",
                "page: the request → execute_request sent", "page → kernel: the execute_request",
                "kernel: the cell runs", "kernel → page: the execute_reply",
                "page: execute_reply → its answer sent", "page → kernel: the answer, and the loop to the next call"]


def _notebook(path: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    for cell_id, source in [("setup", SETUP.replace("TOOL_CALLS", str(RUNS + 1))), ("work", CODE),
                            ("spawn", "%mentra spawn runner --model bench:m --auto-approve run_cell"),
                            ("ask", "%%mentra runner\nrun the work cell")]:
        cell = nbformat.v4.new_code_cell(source)
        cell.id = cell_id
        nb.cells.append(cell)
    nbformat.write(nb, path)


def _kernel_ms(date: str) -> float:
    """A kernel message's header date, in ms since the epoch."""
    return datetime.datetime.fromisoformat(date.replace("Z", "+00:00")).timestamp() * 1000


class _Frames:
    """The page's stamped frames, searched forward in time."""

    def __init__(self, frames: list[list[Any]]) -> None:
        self.frames = sorted(frames, key=lambda f: f[0])

    def first(self, after: float, direction: str, msg_type: str, kind: str = "", op: str = "") -> list[Any]:
        for frame in self.frames:
            if (frame[0] >= after and frame[1] == direction and frame[2] == msg_type
                    and (not kind or frame[3] == kind) and (not op or frame[4] == op)):
                return frame
        raise LookupError(f"no {direction} {msg_type} {kind} {op} frame after {after}")


def _first_cell(cells: list[list[float]], after_ms: float) -> tuple[float, float]:
    """(start, end) in ms of the first cell the kernel started after `after_ms`."""
    start, end = next(c for c in cells if c[1] is not None and c[0] * 1000 >= after_ms)
    return start * 1000, end * 1000


def user_stages(frames: _Frames, cells: list[list[float]], press: float, done: float) -> list[float]:
    """The user's run split into USER_STAGES (ms)."""
    request = frames.first(press, "out", "execute_request")[0]
    start, end = _first_cell(cells, press)
    reply = frames.first(end - 1, "in", "execute_reply")[0]  # (the page's ms against the kernel's µs)
    return [request - press, start - request, end - start, reply - end, done - reply]


def agent_stages(frames: _Frames, cells: list[list[float]], called: float, next_call: float) -> list[float]:
    """One run_cell between the model's reply (`called`) and its next call, split into AGENT_STAGES (ms)."""
    request = frames.first(called - 1, "in", "comm_msg", "request", "run")
    sent, arrived = _kernel_ms(request[5]), request[0]
    execute = frames.first(arrived, "out", "execute_request")[0]
    start, end = _first_cell(cells, sent)
    reply = frames.first(end - 1, "in", "execute_reply")[0]
    answer = frames.first(reply, "out", "comm_msg", "reply")[0]
    return [sent - called, arrived - sent, execute - arrived, start - execute, end - start, reply - end,
            answer - reply, next_call - answer]


def measure() -> dict[str, Any]:
    from tests.benchmarks.lab_page import lab_page
    from tests.browser.notebook_page import NotebookPage, poll

    frames: list[tuple[str, bytes]] = []
    with lab_page("mentra-bench-cells-", lambda root: _notebook(root / "cells.ipynb")) as (server, page):

        def tap(ws: Any) -> None:
            for kind in ("framesent", "framereceived"):
                ws.on(kind, lambda payload, kind=kind: frames.append(
                    (kind, payload if isinstance(payload, bytes) else payload.encode())))

        page.add_init_script(FRAME_STAMPS)
        page.on("websocket", tap)
        nb = NotebookPage(page, server, "cells.ipynb").open_existing()
        try:
            nb.run_cell(0)
            user_marks = []
            for _ in range(RUNS + 1):
                page.evaluate(PROMPT_WATCH, 1)
                nb.cell(1).locator(".jp-InputPrompt").click()
                page.keyboard.press("Control+Enter")  # run in place, as Shift+Enter runs
                done = poll(lambda: page.evaluate("window.__mentraDone"), message="the user's run")
                user_marks.append((page.evaluate("window.__mentraPress"), done))
            nb.run_cell(2)
            comm = nb.kernel.value("nb.session().cell_bridge.comm.comm_id").encode()
            frames.clear()
            nb.run_cell(3)
            # Watched in the page (a probe of the kernel would queue among the runs), twice a
            # second and cheaply: Playwright's expect() polls in the page's main thread, which
            # the runs need (a failed poll even builds the page's accessibility tree).
            poll(lambda: page.evaluate(FINISHED), timeout=120, interval=0.5, message="the agent's runs")
            calls = nb.kernel.value("CALLS")
            cells = nb.kernel.value("CELL_TIMES")
            stamped = _Frames(page.evaluate("window.__mentraFrames"))
        finally:
            nb.close()
    users = [user_stages(stamped, cells, press, done) for press, done in user_marks[1:]]
    agents = [agent_stages(stamped, cells, calls[i][1] * 1000, calls[i + 1][0] * 1000) for i in range(1, RUNS + 1)]
    ours = [(kind, len(payload)) for kind, payload in frames if comm in payload and b"comm_msg" in payload]
    return {"user": [(done - press) / 1000 for press, done in user_marks[1:]],
            "agent": [calls[i + 1][0] - calls[i][1] for i in range(1, RUNS + 1)],
            "user_stages": users, "agent_stages": agents,
            "sent": sum(n for kind, n in ours if kind == "framesent") / (RUNS + 1),
            "received": sum(n for kind, n in ours if kind == "framereceived") / (RUNS + 1),
            "messages": len(ours) / (RUNS + 1)}


def _stage_rows(table: Table, who: str, names: list[str], runs: list[list[float]]) -> None:
    for i, name in enumerate(names):
        values = [run[i] for run in runs]
        crossing = "→ page" in name or "→ kernel" in name
        table.add(who, name, "yes" if crossing else "", f"{statistics.median(values):.0f}",
                  f"{min(values):.0f}", f"{max(values):.0f}")


def run() -> list[Table]:
    r = measure()
    user, agent = statistics.median(r["user"]), statistics.median(r["agent"])
    table = Table("run_cell vs the user's own run of the same cell (JupyterLab, chromium, idle kernel)",
                  ["how", "median ms", "min ms", "max ms", "vs the user"])
    table.add("the user: Ctrl+Enter to In [n] on screen", f"{user * 1000:.0f}", f"{min(r['user']) * 1000:.0f}",
              f"{max(r['user']) * 1000:.0f}", "1.00x")
    table.add("the agent: run_cell call to its result", f"{agent * 1000:.0f}", f"{min(r['agent']) * 1000:.0f}",
              f"{max(r['agent']) * 1000:.0f}", ratio(user, agent))
    stages = Table("Where the time of one run goes (ms, per stage)",
                   ["who", "stage", "crosses page↔kernel", "median", "min", "max"])
    _stage_rows(stages, "user", USER_STAGES, r["user_stages"])
    _stage_rows(stages, "agent", AGENT_STAGES, r["agent_stages"])
    crossings = {who: statistics.median(sum(v for v, name in zip(run, names, strict=True)
                                            if "→ page" in name or "→ kernel" in name) for run in runs)
                 for who, names, runs in [("user", USER_STAGES, r["user_stages"]),
                                          ("agent", AGENT_STAGES, r["agent_stages"])]}
    wire = Table("Bytes the cell tools add on the wire per run_cell call", ["comm messages", "kernel → page bytes",
                                                                       "page → kernel bytes"])
    wire.add(f"{r['messages']:.0f}", f"{r['received']:.0f}", f"{r['sent']:.0f}")
    table.notes += ["target: the agent's round trip ≤ 1.2x the user's on an idle kernel",
                    f"{RUNS} runs each (after one that warms up) of `{CODE.splitlines()[0]}` and a print; the "
                    "agent's includes its turn loop between the model's call and the next request "
                    "(auto-approved, no approval wait)"]
    stages.notes += [f"crossings of the page↔kernel boundary (jupyter_server and the browser in between): the "
                     f"user's run makes 2, {crossings['user']:.0f} ms in all (median); run_cell makes 4, "
                     f"{crossings['agent']:.0f} ms: the kernel must ask the page to run the cell and the page "
                     "must answer, around the same execute request and reply as the user's",
                     "kernel → page includes the messages queued before on the same channel (the agent's views "
                     "update as the tool call starts)"]
    wire.notes += ["the bridge's request and the page's reply (the cell with its outputs, bounded), as websocket "
                   "frames; the execution's own messages are a user's run's and are not counted"]
    return [table, stages, wire]


if __name__ == "__main__":
    for t in run():
        print(t.text(), end="\n\n")
