"""7. Widget traffic on the wire: one reply streamed at a model's pace in a real
kernel, every byte the kernel publishes for it counted as Jupyter sends it.

A raw ZeroMQ subscriber on the kernel's iopub socket receives each message as
the frames the kernel wrote (identity, delimiter, HMAC signature, header,
parent header, metadata, content): the envelope is counted, not just the data.
The same text, paced the same way, is streamed three ways in the same kernel:

- ours: `%mentra send` to an agent whose (scripted) model streams the text,
  with its AgentView displayed;
- peer: an ipywidgets `Output` widget, `print(chunk, end="")` per delta inside
  `with out:` (ipykernel batches stdout into one message per 200 ms);
- baseline: `update_display` of the growing text as Markdown per delta, the
  naive way many notebooks stream (not a peer: no library does this for you).

Latency: the kernel stamps when the model's first delta was produced; the
subscriber stamps when the first message carrying text arrived (same clock).
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.benchmarks.conversation import conversation
from tests.benchmarks.report import Table

__all__ = ["run"]

TOKENS_PER_SECOND = 60
TOKENS = 600  # 10 s of streaming
CHARS_PER_TOKEN = 4


def _text() -> str:
    words = " ".join(t.answer for t in conversation(40))
    return words[: TOKENS * CHARS_PER_TOKEN]


class IopubTap:
    """Every iopub message from now on: (arrival time, msg_type, frame bytes, content)."""

    def __init__(self, connection: dict[str, Any]) -> None:
        import zmq

        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.SUBSCRIBE, b"")
        self._socket.connect(f"{connection['transport']}://{connection['ip']}:{connection['iopub_port']}")
        self.messages: list[tuple[float, str, int, dict[str, Any]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()
        time.sleep(0.5)  # a SUB socket misses what is published before it has joined

    def _listen(self) -> None:
        import zmq

        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(50):
                continue
            frames = self._socket.recv_multipart()
            arrived = time.time()
            split = frames.index(b"<IDS|MSG>")
            header = json.loads(frames[split + 2])
            content = json.loads(frames[split + 5])
            self.messages.append((arrived, header["msg_type"], sum(len(f) for f in frames), content))

    def mark(self) -> int:
        return len(self.messages)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._socket.close(linger=0)
        self._context.term()


SETUP = """
import time, json
import mentra_nb.notebook as nb
from mentra_nb.testing import ScriptedProvider, text_stream
from mentra_nb.providers.events import ContentBlockDelta
TEXT = {text!r}
CHUNKS = [TEXT[i:i + {chars}] for i in range(0, len(TEXT), {chars})]
first_delta = []
class Stamped(ScriptedProvider):
    async def stream(self, request):
        async for event in super().stream(request):
            if isinstance(event, ContentBlockDelta) and not first_delta:
                first_delta.append(time.time())
            yield event
nb.session().runtime.providers.register(
    Stamped('paced', [text_stream(TEXT, chunks=len(CHUNKS), delay=1 / {rate})]))
"""

OURS = """
get_ipython().run_line_magic('mentra', 'spawn writer --model paced:m')
"""
OURS_SEND = """
get_ipython().run_line_magic('mentra', 'send writer write it')
agent = nb.session().runtime.agents[0]
deadline = time.monotonic() + 120
while time.monotonic() < deadline and not (len(agent.history) >= 2 and not agent.is_running):
    time.sleep(0.05)
time.sleep(0.5)  # the view's last messages
print(json.dumps({{"first_delta": first_delta[0], "reply": agent.history[-1].text == TEXT}}))
"""

OUTPUT_WIDGET = """
import ipywidgets
out = ipywidgets.Output()
display(out)
"""
OUTPUT_WIDGET_STREAM = """
started = time.time()
with out:
    for chunk in CHUNKS:
        print(chunk, end="")
        time.sleep(1 / {rate})
time.sleep(0.5)
print(); print(json.dumps({{"first_delta": started}}))
"""

UPDATE_DISPLAY = """
from IPython.display import Markdown, display, update_display
display(Markdown(""), display_id="naive")
"""
UPDATE_DISPLAY_STREAM = """
started = time.time()
shown = ""
for chunk in CHUNKS:
    shown += chunk
    update_display(Markdown(shown), display_id="naive")
    time.sleep(1 / {rate})
print(); print(json.dumps({{"first_delta": started}}))
"""


def _stream(kernel: Any, tap: IopubTap, prepare: str, stream: str, kinds: set[str],
            has_text: Any) -> dict[str, Any]:
    kernel.run(prepare)
    start = tap.mark()
    result = json.loads(kernel.run(stream, timeout=180).strip().splitlines()[-1])
    messages = [m for m in tap.messages[start:] if m[1] in kinds]
    texts = [m for m in messages if has_text(m[3])]
    return {
        "messages": len(messages),
        "bytes": sum(m[2] for m in messages),
        "first": (texts[0][0] - result["first_delta"]) if texts else float("nan"),
        "ok": result.get("reply", True),
        "seconds": (messages[-1][0] - messages[0][0]) if messages else 0.0,
    }


def _custom_text(content: dict[str, Any]) -> bool:
    data = content.get("data", {})
    return data.get("method") == "custom" and bool(data.get("content", {}).get("text"))


def run() -> list[Table]:
    from tests.kernels import Kernel

    text = _text()
    size = len(text.encode())
    with tempfile.TemporaryDirectory(prefix="mentra-bench-wire-") as tmp:
        kernel = Kernel(Path(tmp))
        tap = IopubTap(kernel.manager.get_connection_info())
        try:
            kernel.run("%load_ext mentra_nb")
            kernel.run(SETUP.format(text=text, chars=CHARS_PER_TOKEN, rate=TOKENS_PER_SECOND))
            rows = [
                ("mentra-nb AgentView (ours)",
                 _stream(kernel, tap, OURS, OURS_SEND.format(), {"comm_msg"}, _custom_text)),
                ("peer: ipywidgets Output widget, print() per delta",
                 _stream(kernel, tap, OUTPUT_WIDGET, OUTPUT_WIDGET_STREAM.format(rate=TOKENS_PER_SECOND),
                         {"stream"}, lambda c: bool(c.get("text")))),
                ("baseline: update_display(Markdown(all text so far)) per delta",
                 _stream(kernel, tap, UPDATE_DISPLAY, UPDATE_DISPLAY_STREAM.format(rate=TOKENS_PER_SECOND),
                         {"update_display_data"}, lambda c: True)),
            ]
        finally:
            tap.close()
            kernel.close()
    table = Table(
        f"Widget traffic on the wire: {size:,} bytes of text at {TOKENS_PER_SECOND} tokens/s "
        f"({TOKENS} deltas) in a real kernel",
        ["what", "messages", "messages/s", "bytes on the wire", "÷ the text", "vs ours",
         "first text after the first delta, ms"],
    )
    ours = rows[0][1]
    for label, r in rows:
        table.add(label, r["messages"], r["messages"] / max(r["seconds"], 1e-9),
                  f"{r['bytes'] / 1024:,.1f} KiB", f"{r['bytes'] / size:.2f}",
                  f"{r['bytes'] / ours['bytes']:.2f}x", f"{r['first'] * 1000:.0f}")
    table.notes += [
        "bytes on the wire: every frame of every iopub message of that kind (ours: comm_msg, "
        "state updates included; the Output widget: stream; the baseline: update_display_data), "
        "envelope and signature included, as a raw ZeroMQ subscriber received them",
        "target (ours): ≤ 3x the text's bytes, first text within 100 ms of the first delta",
    ]
    if not ours["ok"]:
        table.notes.append("WARNING: our agent's reply did not match the streamed text")
    return [table]


if __name__ == "__main__":
    for table in run():
        print(table.text(), end="\n\n")
