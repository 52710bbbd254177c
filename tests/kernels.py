"""A real ipykernel through jupyter_client, started the way a Jupyter server
starts one: in a folder, with `JPY_SESSION_NAME` naming a notebook there, so
the state file is found beside the notebook. By default the kernel runs this
interpreter; `python=` runs another one's (an installed wheel's venv)."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

__all__ = ["IopubTap", "Kernel"]


class Kernel:
    def __init__(self, folder: Path, python: str | None = None) -> None:
        env = {**os.environ, "JPY_SESSION_NAME": str(folder / "analysis.ipynb")}
        self._specs: tempfile.TemporaryDirectory[str] | None = None
        if python is None:
            self.manager = KernelManager(kernel_name="python3")
        else:
            self._specs = tempfile.TemporaryDirectory(prefix="mentra-kernelspec-")
            spec = Path(self._specs.name) / "other"
            spec.mkdir()
            (spec / "kernel.json").write_text(json.dumps({
                "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": f"Python ({python})", "language": "python"}))
            self.manager = KernelManager(
                kernel_name="other",
                kernel_spec_manager=KernelSpecManager(kernel_dirs=[self._specs.name]))
        self.manager.start_kernel(cwd=str(folder), env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def execute(self, code: str, timeout: float = 60) -> tuple[str, list[dict[str, Any]], str]:
        """Execute `code`: (its text output, the errors it raised, the reply's status)."""
        chunks: list[str] = []
        errors: list[dict[str, Any]] = []

        def collect(msg: dict[str, Any]) -> None:
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                chunks.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                chunks.append(content["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                errors.append(content)

        reply = self.client.execute_interactive(code, timeout=timeout, output_hook=collect)
        return "".join(chunks), errors, reply["content"]["status"]

    def run(self, code: str, timeout: float = 60) -> str:
        """Execute `code`; return its text output, or raise with the kernel's error."""
        text, errors, status = self.execute(code, timeout)
        if status != "ok" or errors:
            raised = [f"{e['ename']}: {e['evalue']}" for e in errors]
            raise AssertionError(f"kernel error in {code!r}: {raised or status}")
        return text

    def kill_hard(self) -> None:
        os.kill(self.manager.provisioner.pid, signal.SIGKILL)
        self.manager.provisioner.process.wait(timeout=10)

    def close(self) -> None:
        self.client.stop_channels()
        if self.manager.is_alive():
            self.manager.shutdown_kernel(now=True)
        self.manager.cleanup_resources()
        if self._specs is not None:
            self._specs.cleanup()


class IopubTap:
    """Every IOPub message from now on, as a raw ZeroMQ subscriber receives the frames
    the kernel wrote (the envelope is counted, not just the data): (arrival time,
    msg_type, bytes of every frame, content, the routing frames before the delimiter)."""

    def __init__(self, connection: dict[str, Any]) -> None:
        import zmq

        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.SUBSCRIBE, b"")
        self._socket.connect(f"{connection['transport']}://{connection['ip']}:{connection['iopub_port']}")
        self.messages: list[tuple[float, str, int, dict[str, Any], list[bytes]]] = []
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
            self.messages.append((arrived, header["msg_type"], sum(len(f) for f in frames), content,
                                  frames[:split]))

    def mark(self) -> int:
        return len(self.messages)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._socket.close(linger=0)
        self._context.term()
