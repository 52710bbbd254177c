"""A real ipykernel through jupyter_client, started the way a Jupyter server
starts one: in a folder, with `JPY_SESSION_NAME` naming a notebook there, so
the state file is found beside the notebook. By default the kernel runs this
interpreter; `python=` runs another one's (an installed wheel's venv)."""

from __future__ import annotations

import json
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

__all__ = ["Kernel"]


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
